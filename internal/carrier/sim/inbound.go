package sim

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"switchboard/internal/carrier"
	"switchboard/internal/phone"
)

// MinSecretLength is the shortest secret the inbound door accepts, as for
// Kannel's callbacks.
const MinSecretLength = 16

// maxInboundBytes bounds the door's form: a long text, URL-encoded, stays far
// below it.
const maxInboundBytes = 64 << 10

// Handler serves the sim's inbound door, relative to its mount point:
// POST /inbound with a form of from, to and text, and the secret as
// "Authorization: Bearer <secret>" (in a header, so that no access log keeps
// it). It hands the text to [Sim.Inject], so it takes the path a real
// carrier's inbound text takes. Answers: 204 once the sink stored it, 401 for
// a wrong secret (compared in constant time), 400 for a malformed form, 500
// when the sink failed. Mount it with http.StripPrefix, as Kannel's handler.
func (s *Sim) Handler(secret string) http.Handler {
	want := sha256.Sum256([]byte(secret))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /inbound", func(w http.ResponseWriter, r *http.Request) {
		// Hashing first makes the comparison constant-time in the length too.
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			s.log.Warn("sim inbound door: wrong secret", "remote", r.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxInboundBytes)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "malformed form", http.StatusBadRequest)
			return
		}
		from, okFrom := phone.Normalize(r.PostForm.Get("from"))
		to, okTo := phone.Normalize(r.PostForm.Get("to"))
		text := r.PostForm.Get("text")
		switch {
		case !okFrom || !okTo:
			http.Error(w, "from and to must be phone numbers", http.StatusBadRequest)
			return
		case text == "":
			http.Error(w, "text is empty", http.StatusBadRequest)
			return
		}
		if err := s.Inject(r.Context(), carrier.Inbound{From: from, To: to, Text: text}); err != nil {
			s.log.Error("sim inbound door: storing the text failed", "err", err)
			http.Error(w, "not stored", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}
