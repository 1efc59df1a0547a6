package carriers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"switchboard/internal/carrier"
	"switchboard/internal/carrier/telnyx"
	"switchboard/internal/store"
)

// telnyxConn is a running telnyx connection: sends through Telnyx's v2
// messages API, and one webhook URL (/carrier/NAME/webhook) for its
// receipts and inbound texts, each verified by its Ed25519 signature.
// Receipts name Telnyx's message id, kept in carrier_refs: the webhook's
// URL is not signed, so a message id of ours in it could be swapped on a
// replayed body.
type telnyxConn struct {
	id     int64
	st     *store.Store
	client *telnyx.Client
	sink   carrier.Sink
	hook   string // the webhook URL given with each message
	log    *slog.Logger
}

func (r *Router) startTelnyx(c store.CarrierConnection, log *slog.Logger) (*telnyxConn, error) {
	pub, err := telnyx.ParsePublicKey(c.Settings["public-key"])
	if err != nil {
		return nil, fmt.Errorf("--public-key: %w", err)
	}
	cl, err := telnyx.New(telnyx.Config{APIKey: c.Secrets["api-key"], PublicKey: pub,
		MessagingProfileID: c.Settings["messaging-profile-id"], APIBase: c.Settings["api-base"]})
	if err != nil {
		return nil, err
	}
	return &telnyxConn{id: c.ID, st: r.cfg.Store, client: cl, sink: r.sink, hook: r.CallbackURL(c.Name) + "/webhook", log: log}, nil
}

// e164 is a stored number (digits) as providers write it.
func e164(digits string) string { return "+" + digits }

// Send implements carrier.Carrier. Throttling waits and sends again, until
// ctx ends.
func (t *telnyxConn) Send(ctx context.Context, m carrier.Message) (carrier.Accepted, error) {
	if len(m.To) != 1 {
		return carrier.Accepted{}, fmt.Errorf("%w: a Telnyx connection sends to one number (no group texts)", carrier.ErrUnavailable)
	}
	msg := telnyx.Message{From: e164(m.From), To: e164(m.To[0]), Text: m.Text, MediaURLs: m.Media, WebhookURL: t.hook}
	for {
		id, err := t.client.Send(ctx, msg)
		var te *telnyx.Error
		switch {
		case err == nil:
			if rerr := t.st.AddCarrierRefs(context.WithoutCancel(ctx), t.id, m.ID, []string{id}); rerr != nil {
				return carrier.Accepted{}, fmt.Errorf("%w: Telnyx took it (%s) but its id was not recorded: %v", carrier.ErrUnknown, id, rerr)
			}
			return carrier.Accepted{Ref: id}, nil
		case errors.As(err, &te) && te.Throttled():
			if werr := sleep(ctx, max(te.RetryAfter, time.Second)); werr != nil {
				return carrier.Accepted{}, fmt.Errorf("%w: %w: throttled by Telnyx until the send gave up: %v", carrier.ErrUnavailable, errLater, err)
			}
		case errors.Is(err, telnyx.ErrNotSent): // not reached: a queued message waits for it
			return carrier.Accepted{}, fmt.Errorf("%w: %w: %v", carrier.ErrUnavailable, errLater, err)
		case errors.As(err, &te) && te.Refused():
			return carrier.Accepted{}, fmt.Errorf("%w: %v", carrier.ErrUnavailable, err)
		default:
			return carrier.Accepted{}, fmt.Errorf("%w: %v", carrier.ErrUnknown, err)
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// handler serves POST /webhook: a bad or missing signature is 403 and
// changes nothing; a receipt for a message id not recorded yet is 503, so
// that Telnyx sends it again.
func (t *telnyxConn) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /webhook", func(w http.ResponseWriter, r *http.Request) {
		body, err := t.client.VerifyRequest(r, time.Now())
		if err != nil {
			t.log.Warn("telnyx webhook refused", "err", err)
			http.Error(w, "signature", http.StatusForbidden)
			return
		}
		ev, err := telnyx.ParseEvent(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ctx := r.Context()
		switch {
		case ev.Receipt != nil:
			msg, err := t.st.CarrierRefMessage(ctx, t.id, ev.Receipt.MessageID)
			if err != nil {
				http.Error(w, "unknown message", http.StatusServiceUnavailable)
				return
			}
			var detail []string
			for _, p := range ev.Receipt.Errors {
				detail = append(detail, strings.TrimSpace(p.Code+" "+p.Title))
			}
			err = t.sink.Receipt(ctx, carrier.Receipt{MessageID: msg, Status: ev.Receipt.Status, Error: strings.Join(detail, "; "), At: time.Now()})
			if err != nil {
				http.Error(w, "not stored", http.StatusServiceUnavailable)
				return
			}
		case ev.Inbound != nil:
			in := carrier.Inbound{From: strings.TrimPrefix(ev.Inbound.From, "+"), To: strings.TrimPrefix(ev.Inbound.To, "+"),
				Text: ev.Inbound.Text, Media: ev.Inbound.MediaURLs, At: time.Now()}
			if err := t.sink.Inbound(ctx, in); err != nil {
				t.log.Warn("telnyx inbound text not stored", "err", err)
				http.Error(w, "not stored", http.StatusServiceUnavailable)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	return mux
}
