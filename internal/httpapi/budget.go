package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"switchboard/internal/domain"
)

// A send can carry 72 MB of attachments in base64, and decoding it holds
// several copies (the body, the decoded strings, the decoded bytes) for the
// life of the request: a few hundred megabytes. Large bodies therefore share a
// budget of bytes in flight, so that a burst of them waits its turn instead
// of exhausting the machine's memory. Ordinary texts stay out of it.
const (
	defaultBodyBudget = 256 << 20
	defaultBodyWait   = 30 * time.Second
	// smallBody is the largest declared body that needs no share of the
	// budget: a text with small attachments.
	smallBody = 1 << 20
)

// bodyBudget holds the bytes of large request bodies in flight.
type bodyBudget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration
	held atomic.Int64 // bytes granted now: the switchboard_http_large_body_bytes gauge
}

func newBodyBudget(size int64, wait time.Duration) *bodyBudget {
	if size <= 0 {
		size = defaultBodyBudget
	}
	if wait <= 0 {
		wait = defaultBodyWait
	}
	return &bodyBudget{sem: semaphore.NewWeighted(size), size: size, wait: wait}
}

// budgeted runs h once the request's body, at most limit bytes, fits in the
// budget; a body of unknown length that is over smallBody counts as limit. A
// request that has not found room after the wait is 503 unavailable, having
// read nothing more.
func (s *Server) budgeted(limit int64, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		n := r.ContentLength
		if n < 0 {
			// Unknown length (chunked): read up to smallBody first, so that
			// a small text is not counted as the largest possible body.
			head, err := io.ReadAll(io.LimitReader(r.Body, smallBody+1))
			if err != nil {
				return bodyError(w, err)
			}
			if len(head) <= smallBody {
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(head)), int64(len(head))
				return h(w, r)
			}
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
			n = limit
		}
		switch {
		case n > limit:
			return h(w, r) // refused unread by the body reader
		case n <= smallBody:
			return h(w, r)
		}
		n = min(n, s.bodies.size)
		ctx, cancel := context.WithTimeout(r.Context(), s.bodies.wait)
		defer cancel()
		if err := s.bodies.sem.Acquire(ctx, n); err != nil {
			return domain.Errorf(domain.Unavailable, "too many large uploads in progress; retry with backoff")
		}
		s.bodies.held.Add(n)
		defer func() {
			s.bodies.held.Add(-n)
			s.bodies.sem.Release(n)
		}()
		return h(w, r)
	}
}
