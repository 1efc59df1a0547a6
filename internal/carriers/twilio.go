package carriers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/carrier"
	"switchboard/internal/carrier/twilio"
	"switchboard/internal/store"
)

// twilioConn is a running twilio connection: sends through Twilio's
// Messages API with a status callback of the connection's
// (/carrier/NAME/status?m=ID), and the inbound URL (/carrier/NAME/inbound)
// set on the numbers. Twilio signs the whole URL it calls, query included,
// so the message id in the callback's query is Twilio's word, not a
// caller's; every callback is verified before anything is read.
type twilioConn struct {
	client *twilio.Client
	sink   carrier.Sink
	base   string // the connection's callback base URL
	log    *slog.Logger
}

func (r *Router) startTwilio(c store.CarrierConnection, log *slog.Logger) (*twilioConn, error) {
	cl, err := twilio.New(twilio.Config{AccountSID: c.Settings["account-sid"], AuthToken: c.Secrets["auth-token"],
		MessagingServiceSID: c.Settings["messaging-service-sid"], APIBase: c.Settings["api-base"]})
	if err != nil {
		return nil, err
	}
	return &twilioConn{client: cl, sink: r.sink, base: r.CallbackURL(c.Name), log: log}, nil
}

// Send implements carrier.Carrier. Throttling waits and sends again, until
// ctx ends.
func (t *twilioConn) Send(ctx context.Context, m carrier.Message) (carrier.Accepted, error) {
	if len(m.To) != 1 {
		return carrier.Accepted{}, fmt.Errorf("%w: a Twilio connection sends to one number (no group texts)", carrier.ErrUnavailable)
	}
	msg := twilio.Message{From: e164(m.From), To: e164(m.To[0]), Body: m.Text, MediaURLs: m.Media,
		StatusCallback: t.base + "/status?m=" + strconv.FormatInt(m.ID, 10)}
	for {
		sid, err := t.client.Send(ctx, msg)
		var te *twilio.Error
		switch {
		case err == nil:
			return carrier.Accepted{Ref: sid}, nil
		case errors.As(err, &te) && te.Throttled():
			if werr := sleep(ctx, max(te.RetryAfter, time.Second)); werr != nil {
				return carrier.Accepted{}, fmt.Errorf("%w: %w: throttled by Twilio until the send gave up: %v", carrier.ErrUnavailable, errLater, err)
			}
		case errors.Is(err, twilio.ErrNotSent): // not reached: a queued message waits for it
			return carrier.Accepted{}, fmt.Errorf("%w: %w: %v", carrier.ErrUnavailable, errLater, err)
		case errors.As(err, &te) && te.Refused():
			return carrier.Accepted{}, fmt.Errorf("%w: %v", carrier.ErrUnavailable, err)
		default:
			return carrier.Accepted{}, fmt.Errorf("%w: %v", carrier.ErrUnknown, err)
		}
	}
}

// handler serves Twilio's callbacks: POST /status (a message's status) and
// POST /inbound (a text to one of the connection's numbers). A bad or
// missing signature is 403 and changes nothing.
func (t *twilioConn) handler() http.Handler {
	mux := http.NewServeMux()
	verify := func(w http.ResponseWriter, r *http.Request, path string) (map[string][]string, bool) {
		public := t.base + path
		if r.URL.RawQuery != "" {
			public += "?" + r.URL.RawQuery
		}
		form, err := t.client.VerifyRequest(r, public)
		switch {
		case errors.Is(err, twilio.ErrTooLarge):
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return nil, false
		case err != nil:
			t.log.Warn("twilio callback refused", "err", err)
			http.Error(w, "signature", http.StatusForbidden)
			return nil, false
		}
		return form, true
	}
	mux.HandleFunc("POST /status", func(w http.ResponseWriter, r *http.Request) {
		form, ok := verify(w, r, "/status")
		if !ok {
			return
		}
		id, err := strconv.ParseInt(r.URL.Query().Get("m"), 10, 64)
		if err != nil || id <= 0 {
			http.Error(w, "no message", http.StatusBadRequest)
			return
		}
		st, err := twilio.ParseStatus(form)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var detail string
		if st.ErrorCode != 0 {
			detail = strconv.Itoa(st.ErrorCode)
		}
		if err := t.sink.Receipt(r.Context(), carrier.Receipt{MessageID: id, Status: st.Status, Error: detail, At: time.Now()}); err != nil {
			http.Error(w, "not stored", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /inbound", func(w http.ResponseWriter, r *http.Request) {
		form, ok := verify(w, r, "/inbound")
		if !ok {
			return
		}
		in, err := twilio.ParseInbound(form)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var media []string
		for _, m := range in.Media {
			media = append(media, m.URL)
		}
		err = t.sink.Inbound(r.Context(), carrier.Inbound{From: strings.TrimPrefix(in.From, "+"), To: strings.TrimPrefix(in.To, "+"),
			Text: in.Body, Media: media, At: time.Now()})
		if err != nil {
			t.log.Warn("twilio inbound text not stored", "err", err)
			http.Error(w, "not stored", http.StatusServiceUnavailable)
			return
		}
		// An empty TwiML answer: no reply text.
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprint(w, "<Response></Response>")
	})
	return mux
}
