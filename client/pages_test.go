package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// The call search iterator follows offset and total: five calls in pages
// of two take three requests, each at the next offset; a failure on a
// later page is yielded after the calls before it.
func TestCallsPages(t *testing.T) {
	var offsets []int
	failAt := -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req CallSearchRequest
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil || req.Limit == nil || req.Offset == nil || req.Start != 1 || req.End != 2 {
			t.Errorf("request %s: %v", b, err)
		}
		off := *req.Offset
		offsets = append(offsets, off)
		if off == failAt {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"type":"unavailable","message":"db"}}`)
			return
		}
		var page CallSearchResult
		page.Limit, page.Offset, page.Total = *req.Limit, off, 5
		for i := off; i < min(off+*req.Limit, 5); i++ {
			page.Calls = append(page.Calls, Call{Id: fmt.Sprint(i)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"data": page})
	}))
	defer srv.Close()
	api, err := New(srv.URL, "k")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for c, err := range api.Calls(context.Background(), CallSearchRequest{Start: 1, End: 2, Limit: Ptr(2)}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Id)
	}
	if !slices.Equal(got, []string{"0", "1", "2", "3", "4"}) || !slices.Equal(offsets, []int{0, 2, 4}) {
		t.Errorf("calls %v at offsets %v", got, offsets)
	}

	offsets, got, failAt = nil, nil, 2
	var last error
	for c, err := range api.Calls(context.Background(), CallSearchRequest{Start: 1, End: 2, Limit: Ptr(2)}) {
		if err != nil {
			last = err
			continue
		}
		got = append(got, c.Id)
	}
	var apiErr *APIError
	if !slices.Equal(got, []string{"0", "1"}) || !errors.As(last, &apiErr) || apiErr.Status != 503 || apiErr.Type != "unavailable" {
		t.Errorf("calls %v, error %v", got, last)
	}
}
