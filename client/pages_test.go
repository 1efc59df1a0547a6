package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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

// drain reads seq to its end (at most limit items) and returns how many
// items came and the error that ended it.
func drain[T any](seq iter.Seq2[T, error], limit int) (n int, err error) {
	for _, err := range seq {
		if err != nil {
			return n, err
		}
		if n++; n == limit {
			break
		}
	}
	return n, nil
}

// iterators are the four page iterators, each reduced to a count and an
// error.
func iterators(api *API) map[string]func() (int, error) {
	ctx := context.Background()
	return map[string]func() (int, error){
		"Conversations": func() (int, error) {
			return drain(api.Conversations(ctx, ListConversationsParams{Limit: Ptr("1")}), 1000)
		},
		"ThreadMessages": func() (int, error) {
			return drain(api.ThreadMessages(ctx, "14155550100", "14155550123", ReadThreadParams{Limit: Ptr("1")}), 1000)
		},
		"Deliveries": func() (int, error) {
			return drain(api.Deliveries(ctx, "1", ListWebhookDeliveriesParams{Limit: Ptr(1)}), 1000)
		},
		"Calls": func() (int, error) {
			return drain(api.Calls(ctx, CallSearchRequest{Start: 1, End: 2, Limit: Ptr(1)}), 1000)
		},
	}
}

// A 2xx that is not the JSON page (a 204, a proxy's HTML, a 206) is an
// error that says what came; it was a nil JSON200 dereferenced.
func TestPagesUnexpectedAnswers(t *testing.T) {
	for _, tc := range []struct {
		status int
		ctype  string
	}{
		{http.StatusNoContent, ""},
		{http.StatusOK, "text/html; charset=utf-8"},
		{http.StatusPartialContent, "application/json"},
		{http.StatusAccepted, "application/json"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.ctype != "" {
				w.Header().Set("Content-Type", tc.ctype)
			}
			w.WriteHeader(tc.status)
			fmt.Fprint(w, `{"data":[]}`)
		}))
		api, err := New(srv.URL, "k")
		if err != nil {
			t.Fatal(err)
		}
		for name, run := range iterators(api) {
			n, err := run()
			var unexpected *UnexpectedResponseError
			if n != 0 || !errors.As(err, &unexpected) || unexpected.Status != tc.status || unexpected.ContentType != tc.ctype || unexpected.Want != "200 application/json" {
				t.Errorf("%s, %d %q: %d items, error %#v", name, tc.status, tc.ctype, n, err)
			}
		}
		srv.Close()
	}
}

// Each page's answer is bounded: an endless one is an error, not a heap
// that grows until the process dies.
func TestPageTooLong(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":[`)
		pad := bytes.Repeat([]byte(" "), 64<<10)
		for {
			if _, err := w.Write(pad); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	api, err := New(srv.URL, "k")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := iterators(api)["Conversations"](); n != 0 || !errors.Is(err, errPageTooLong) {
		t.Errorf("%d items, error %v", n, err)
	}
}

// A `next` cursor seen before (the same again, or an earlier page's) is an
// error, not a loop that asks for the same pages forever.
func TestDeliveriesRepeatedCursor(t *testing.T) {
	for name, tc := range map[string]struct {
		before *int64
		nexts  []int64
		pages  int
	}{
		"the same next again":        {nil, []int64{5, 5}, 2},
		"an earlier page's next":     {nil, []int64{9, 7, 9}, 3},
		"the before it started from": {Ptr[int64](9), []int64{9}, 1},
	} {
		var requests []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests = append(requests, r.URL.Query().Get("before"))
			next := tc.nexts[min(len(requests), len(tc.nexts))-1]
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"data":[{"id":%d,"event_id":"evt_1","attempt":1,"status":"succeeded","created_at":"2026-11-26T10:00:00Z"}],"next":%d}`, len(requests), next)
		}))
		api, err := New(srv.URL, "k")
		if err != nil {
			t.Fatal(err)
		}
		n, err := drain(api.Deliveries(context.Background(), "1", ListWebhookDeliveriesParams{Before: tc.before}), 1000)
		if n != tc.pages || err == nil || !strings.Contains(err.Error(), "came before") || len(requests) != tc.pages {
			t.Errorf("%s: %d items from requests %q, error %v", name, n, requests, err)
		}
		srv.Close()
	}
}

// The call search's next offset is the one asked for plus the calls that
// came, whatever offset the page claims: a server that always says 0 made
// the iterator ask for the same page forever.
func TestCallsOffsetIsTheClients(t *testing.T) {
	var offsets []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req CallSearchRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Offset == nil {
			t.Errorf("request: %v", err)
			return
		}
		offsets = append(offsets, *req.Offset)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":{"calls":[{"id":"%d"},{"id":"%d"}],"limit":2,"offset":0,"total":6}}`, *req.Offset, *req.Offset+1)
	}))
	defer srv.Close()
	api, err := New(srv.URL, "k")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := drain(api.Calls(context.Background(), CallSearchRequest{Start: 1, End: 2, Limit: Ptr(2)}), 100); n != 6 || err != nil || !slices.Equal(offsets, []int{0, 2, 4}) {
		t.Errorf("%d calls, error %v, offsets %v", n, err, offsets)
	}
}
