package kannel

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/carrier"
)

// maxQueryBytes bounds a callback's query string. A long inbound text
// reassembled from many parts, UCS-2 and URL-encoded, stays far below it.
const maxQueryBytes = 64 << 10

// dlrStatus names Kannel's DLR types in Kannel's own terms.
var dlrStatus = map[int]string{
	1:  "delivered",
	2:  "undelivered",
	4:  "buffered",
	8:  "smsc_submit",
	16: "smsc_reject",
	32: "smsc_intermediate", // SMSC intermediate notification: progress, not an outcome
}

// dlrFailed lists the DLR types that mean the message will not arrive.
var dlrFailed = map[int]bool{2: true, 16: true}

// Handler serves Kannel's callbacks, relative to its mount point:
// GET /dlr (delivery reports) and GET /inbound (sms-service get-url).
// Mount it with http.StripPrefix; see the package documentation.
func (d *Driver) Handler(sink carrier.Sink) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /dlr", d.guard(func(w http.ResponseWriter, r *http.Request, q url.Values) {
		d.serveDLR(w, r, q, sink)
	}))
	mux.Handle("GET /inbound", d.guard(func(w http.ResponseWriter, r *http.Request, q url.Values) {
		d.serveInbound(w, r, q, sink)
	}))
	return mux
}

// guard bounds the request, parses its query and checks the secret before
// calling next.
func (d *Driver) guard(next func(http.ResponseWriter, *http.Request, url.Values)) http.Handler {
	want := sha256.Sum256([]byte(d.secret))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The mux lets HEAD through a GET pattern; a callback has effects,
		// so only Kannel's GET runs it.
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if len(r.URL.RawQuery) > maxQueryBytes {
			http.Error(w, "query too long", http.StatusRequestURITooLong)
			return
		}
		// Kannel sends no body; refuse to read one if anything else does.
		r.Body = http.MaxBytesReader(w, r.Body, 0)
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			http.Error(w, "malformed query", http.StatusBadRequest)
			return
		}
		// Hashing first makes the comparison constant-time in the length
		// too. The secret itself is never logged.
		// One secret, given once: a second value would be ignored by Get.
		secrets := q["secret"]
		if len(secrets) != 1 {
			secrets = []string{""}
		}
		got := sha256.Sum256([]byte(secrets[0]))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			d.log.Warn("kannel callback with a wrong secret", "path", r.URL.Path, "remote", r.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next(w, r, q)
	})
}

func (d *Driver) serveDLR(w http.ResponseWriter, r *http.Request, q url.Values, sink carrier.Sink) {
	rc, err := d.parseDLR(q)
	if err != nil {
		d.log.Warn("kannel: malformed delivery report", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := sink.Receipt(r.Context(), rc); err != nil {
		d.log.Error("kannel: storing delivery report failed", "message_id", rc.MessageID, "status", rc.Status, "err", err)
		http.Error(w, "not stored", http.StatusInternalServerError)
		return
	}
	ok(w)
}

func (d *Driver) parseDLR(q url.Values) (carrier.Receipt, error) {
	id, err := strconv.ParseInt(q.Get("id"), 10, 64)
	if err != nil || id <= 0 || !isDigits(q.Get("id")) {
		return carrier.Receipt{}, errors.New("id must be a positive integer")
	}
	typ, err := strconv.Atoi(q.Get("type"))
	if err != nil || typ < 0 {
		return carrier.Receipt{}, errors.New("type must be a Kannel DLR type")
	}
	status, known := dlrStatus[typ]
	if !known {
		status = "dlr_" + strconv.Itoa(typ)
	}
	rc := carrier.Receipt{MessageID: id, Status: status}
	if dlrFailed[typ] {
		rc.Error = strings.TrimSpace(q.Get("reply"))
		if rc.Error == "" {
			rc.Error = status
		}
	}
	rc.At, err = d.timestamp(q.Get("ts"))
	if err != nil {
		return carrier.Receipt{}, err
	}
	return rc, nil
}

func (d *Driver) serveInbound(w http.ResponseWriter, r *http.Request, q url.Values, sink carrier.Sink) {
	in, err := d.parseInbound(q)
	if err != nil {
		d.log.Warn("kannel: malformed inbound text", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := sink.Inbound(r.Context(), in); err != nil {
		d.log.Error("kannel: storing inbound text failed", "to", in.To, "err", err)
		http.Error(w, "not stored", http.StatusInternalServerError)
		return
	}
	ok(w)
}

func (d *Driver) parseInbound(q url.Values) (carrier.Inbound, error) {
	from, okFrom := normalizeNumber(q.Get("from"))
	to, okTo := normalizeNumber(q.Get("to"))
	if !okFrom || !okTo {
		return carrier.Inbound{}, errors.New("from and to must be phone numbers")
	}
	coding := -1
	if c := q.Get("coding"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil {
			return carrier.Inbound{}, errors.New("coding must be an integer")
		}
		coding = n
	}
	at, err := d.timestamp(q.Get("ts"))
	if err != nil {
		return carrier.Inbound{}, err
	}
	return carrier.Inbound{
		From: from,
		To:   to,
		Text: decodeText([]byte(q.Get("text")), coding, q.Get("charset")),
		At:   at,
	}, nil
}

// timestamp reads Kannel's %T (Unix seconds); empty means "now".
func (d *Driver) timestamp(s string) (time.Time, error) {
	if s == "" {
		return d.now().UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	// Up to the end of year 9999: a larger value would overflow the
	// microseconds it is stored as, and is no RFC 3339 time.
	if err != nil || sec <= 0 || sec > 253402300799 {
		return time.Time{}, errors.New("ts must be Unix seconds, up to the year 9999")
	}
	return time.Unix(sec, 0).UTC(), nil
}

// normalizeNumber strips surrounding spaces and one leading '+', or the
// international prefix 00 that some SMSCs put in its place (no number with a
// country code starts with 0), and requires the rest to be digits, at most
// E.164's 15. Without this, a STOP from 0044… would not opt out 44….
func normalizeNumber(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if t, ok := strings.CutPrefix(s, "+"); ok {
		s = t
	} else if t, ok := strings.CutPrefix(s, "00"); ok && t != "" && t[0] != '0' {
		s = t
	}
	return s, isDigits(s) && len(s) <= 15
}

// ok answers 200 with an empty body: smsbox then sends no reply SMS.
func ok(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}
