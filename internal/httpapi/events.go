package httpapi

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/stream"
)

// eventsReadable is GET /events's scope check: any scope that shows some
// events (the stream then sends only what the credential may read).
func eventsReadable(p auth.Principal) error {
	if p.Has(auth.MessagesRead) || p.Has(auth.SMSRead) || p.Has(auth.ReportsRead) {
		return nil
	}
	return stream.ErrNoScope
}

// streamEvents runs GET /events: the live event stream (Server-Sent
// Events; internal/stream).
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	if s.events == nil {
		return domain.Errorf(domain.Unavailable, "the event stream is not running on this server")
	}
	if !acceptsEventStream(r.Header.Values("Accept")) {
		return &domain.Error{Code: domain.Invalid, Kind: domain.NotAcceptable,
			Message: "this endpoint answers text/event-stream (Server-Sent Events); send Accept: text/event-stream"}
	}
	q := queryOf(r)
	types := q.list("types")
	lines := q.list("lines")
	after, hasAfter := q.raw("after")
	if err := q.err(); err != nil {
		return err
	}
	for _, t := range types {
		if !domain.IsWebhookType(t) {
			return domain.Errorf(domain.Invalid, "query parameter types: unknown event type %q (GET /webhooks/types lists them)", t)
		}
	}
	// The header is what a reconnecting client sends; after is for the
	// first connection of a client that kept the id itself. The header wins.
	var resume *int64
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		n, ok := parseEventID(id)
		if !ok {
			return domain.Errorf(domain.Invalid, "header Last-Event-ID must be an event id such as evt_42; got %s", excerpt(id))
		}
		resume = &n
	} else if hasAfter {
		n, ok := parseEventID(after)
		if !ok {
			return domain.Errorf(domain.Invalid, "query parameter after must be an event id such as evt_42; got %s", excerpt(after))
		}
		resume = &n
	}
	p := principal(r)
	f, err := s.events.FilterFor(r.Context(), p, types, lines, false)
	if err != nil {
		return err
	}
	token, _ := bearer(r)
	recheck := func(ctx context.Context) (*stream.Filter, error) {
		// A new read scope each time: the request's would keep answering
		// from the version it first read, and never see a revocation.
		ctx = s.store.ReadScope(ctx)
		p, err := s.auth.Authenticate(ctx, token)
		if err == nil {
			var f *stream.Filter
			if f, err = s.events.FilterFor(ctx, p, types, lines, true); err == nil {
				return f, nil
			}
		}
		var de *domain.Error
		if errors.As(err, &de) {
			return nil, err // refused: revoked, expired, or no longer allowed
		}
		return nil, nil // the database did not answer: keep streaming
	}
	// Streams of the same credential and parameters share one recheck a
	// second (many screens of one user, a fleet on one API key).
	key := strconv.Quote(token) + strconv.Quote(strings.Join(types, ",")) + strconv.Quote(strings.Join(lines, ","))
	return s.events.Serve(w, r, stream.Request{AccountID: p.AccountID, Filter: f, Resume: resume, Recheck: recheck, RecheckKey: key,
		Holder: streamHolder(p), Retention: s.eventKeep}, s.eventCfg)
}

// streamHolder is who a stream counts against for one credential's share
// of the account's streams: an API key, or a person, whatever grant their
// token comes from (a person could otherwise sign in again for another
// share; docs/decisions.md, "One credential holds half the streams").
func streamHolder(p auth.Principal) string {
	if p.IsUser() {
		return "user:" + strconv.FormatInt(p.UserID, 10)
	}
	return p.Credential
}

// excerptMax is how much of a value that is not an event id an error
// message quotes.
const excerptMax = 32

// excerpt quotes the start of a value a client sent that is not an event
// id, and says how long it was when it cut it: the header may be as long as
// the server's header limit, and an answer that echoed it whole would be as
// large.
func excerpt(v string) string {
	if len(v) <= excerptMax {
		return strconv.Quote(v)
	}
	cut := excerptMax
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut-- // not inside a character
	}
	return strconv.Quote(v[:cut]) + fmt.Sprintf("… (the first %d of %d bytes)", cut, len(v))
}

// parseEventID reads evt_N (N ≥ 0; evt_0 is the start of the stream).
func parseEventID(s string) (int64, bool) {
	digits, ok := strings.CutPrefix(s, "evt_")
	if !ok || digits == "" || digits[0] == '+' || digits[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n >= 0
}

// acceptsEventStream reports whether an Accept header allows
// text/event-stream: no header, or a range that matches it with a nonzero
// quality.
func acceptsEventStream(headers []string) bool {
	if len(headers) == 0 {
		return true
	}
	for _, h := range headers {
		for _, item := range strings.Split(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(item))
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(q, 64); err != nil || v <= 0 {
					continue
				}
			}
			if mt == "text/event-stream" || mt == "text/*" || mt == "*/*" {
				return true
			}
		}
	}
	return false
}
