package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
)

// The list operations answer one page at a time; these iterators walk every
// page, asking for the next only when the loop reaches it. An error (a
// failed request, an answer outside 2xx as *APIError, a 2xx that is not the
// JSON page as *UnexpectedResponseError, a page over 32 MiB, a cursor that
// repeats) is yielded once and ends the sequence: a broken or hostile server
// can end it early but cannot make it panic, hold unbounded memory or ask
// for the same page forever.
//
// Offset paging (conversations, a thread, call search) reads a list that
// may change meanwhile: an item that moves up between two pages can be
// skipped or seen twice. The deliveries' cursor does not have that problem.

// maxPage is the largest page the offset-paged lists accept.
const maxPage = 200

// maxPageBody bounds one page's answer; the largest the server sends (500
// calls) is well under 1 MiB.
const maxPageBody = 32 << 20

var errPageTooLong = errors.New("client: a page's answer is longer than 32 MiB")

// Conversations yields every conversation of ListConversations (newest
// activity first) matching params' filters, from params.Offset on.
// params.Limit is the page size (default 200, the most allowed).
func (a *API) Conversations(ctx context.Context, params ListConversationsParams) iter.Seq2[ConversationListItem, error] {
	return func(yield func(ConversationListItem, error) bool) {
		limit, offset, err := pageBounds(params.Limit, params.Offset)
		if err != nil {
			yield(ConversationListItem{}, err)
			return
		}
		for {
			p := params
			p.Limit, p.Offset = Ptr(strconv.Itoa(limit)), Ptr(strconv.Itoa(offset))
			r, err := decodePage(ParseListConversationsResponse)(a.raw.ListConversations(ctx, &p))
			if err != nil {
				yield(ConversationListItem{}, err)
				return
			}
			for _, c := range r.JSON200.Data {
				if !yield(c, nil) {
					return
				}
			}
			if len(r.JSON200.Data) < limit {
				return
			}
			offset += len(r.JSON200.Data)
		}
	}
}

// ThreadMessages yields every message of the thread of line and number
// (ReadThread; params.GroupParticipants addresses a group thread), newest
// first, from params.Offset on. params.MarkRead
// applies to the first request only (it marks the whole thread).
func (a *API) ThreadMessages(ctx context.Context, line, number string, params ReadThreadParams) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		limit, offset, err := pageBounds(params.Limit, params.Offset)
		if err != nil {
			yield(Message{}, err)
			return
		}
		for {
			p := params
			p.Limit, p.Offset = Ptr(strconv.Itoa(limit)), Ptr(strconv.Itoa(offset))
			r, err := decodePage(ParseReadThreadResponse)(a.raw.ReadThread(ctx, line, number, &p))
			if err != nil {
				yield(Message{}, err)
				return
			}
			params.MarkRead = nil
			msgs := r.JSON200.Data.Messages
			for _, m := range msgs {
				if !yield(m, nil) {
					return
				}
			}
			if len(msgs) < limit {
				return
			}
			offset += len(msgs)
		}
	}
}

// Deliveries yields every delivery of webhook id, newest first, following
// the `next` cursor; params.Before starts older than that delivery and
// params.Limit is the page size (default 200). A `next` already seen (the
// same page again, or an earlier one) is an error.
func (a *API) Deliveries(ctx context.Context, id string, params ListWebhookDeliveriesParams) iter.Seq2[WebhookDelivery, error] {
	return func(yield func(WebhookDelivery, error) bool) {
		if params.Limit == nil {
			params.Limit = Ptr(maxPage)
		}
		seen := map[int64]bool{}
		if params.Before != nil {
			seen[*params.Before] = true
		}
		for {
			r, err := decodePage(ParseListWebhookDeliveriesResponse)(a.raw.ListWebhookDeliveries(ctx, id, &params))
			if err != nil {
				yield(WebhookDelivery{}, err)
				return
			}
			for _, d := range r.JSON200.Data {
				if !yield(d, nil) {
					return
				}
			}
			next := r.JSON200.Next
			if next == nil || len(r.JSON200.Data) == 0 {
				return
			}
			if seen[*next] {
				yield(WebhookDelivery{}, fmt.Errorf("client: the deliveries' next cursor %d came before: the server would send the same pages again", *next))
				return
			}
			seen[*next] = true
			params.Before = next
		}
	}
}

// Calls yields every call SearchCalls finds for req, in req's sort order,
// from req.Offset on; req.Limit is the page size (default 500, the most
// the server applies).
func (a *API) Calls(ctx context.Context, req CallSearchRequest) iter.Seq2[Call, error] {
	return func(yield func(Call, error) bool) {
		if req.Limit == nil {
			req.Limit = Ptr(500)
		}
		if req.Offset == nil {
			req.Offset = Ptr(0)
		}
		for {
			r, err := decodePage(ParseSearchCallsResponse)(a.raw.SearchCalls(ctx, req))
			if err != nil {
				yield(Call{}, err)
				return
			}
			page := r.JSON200.Data
			for _, c := range page.Calls {
				if !yield(c, nil) {
					return
				}
			}
			// The next offset is the one asked for plus what came, not
			// the page's own offset, which a broken server could repeat.
			next := *req.Offset + len(page.Calls)
			if len(page.Calls) == 0 || next >= page.Total {
				return
			}
			req.Offset = Ptr(next)
		}
	}
}

// pageBounds reads the generated string-typed limit and offset (the
// document gives them as strings with a pattern) with their defaults.
func pageBounds(limit, offset *string) (int, int, error) {
	l, o := maxPage, 0
	var err error
	if limit != nil {
		if l, err = strconv.Atoi(*limit); err != nil || l < 1 {
			return 0, 0, fmt.Errorf("client: limit %q is not a positive integer", *limit)
		}
	}
	if offset != nil {
		if o, err = strconv.Atoi(*offset); err != nil || o < 0 {
			return 0, 0, fmt.Errorf("client: offset %q is not a non-negative integer", *offset)
		}
	}
	return l, o, nil
}

// decodePage returns parse (a generated Parse...Response) with checkPage
// before it, to take a raw operation's (*http.Response, error).
func decodePage[R any](parse func(*http.Response) (R, error)) func(*http.Response, error) (R, error) {
	return func(resp *http.Response, err error) (R, error) {
		if resp, err = checkPage(resp, err); err != nil {
			var none R
			return none, err
		}
		return parse(resp)
	}
}

// checkPage takes the answer to a list request before it is decoded: a 200
// with a JSON content type (the generated parser's own test for its
// JSON200) with the body bounded by maxPageBody, or else the answer's
// error (answerError).
func checkPage(resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return nil, answerError(resp, "200 application/json")
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: maxPageBody}
	return resp, nil
}

// limitedBody fails a read past its bound with errPageTooLong.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n, errPageTooLong
	}
	return n, err
}
