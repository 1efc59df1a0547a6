package client

import (
	"context"
	"fmt"
	"iter"
	"strconv"
)

// The list operations answer one page at a time; these iterators walk every
// page, asking for the next only when the loop reaches it. An error (a
// failed request or an answer outside 2xx, as *APIError) is yielded once and
// ends the sequence.
//
// Offset paging (conversations, a thread, call search) reads a list that
// may change meanwhile: an item that moves up between two pages can be
// skipped or seen twice. The deliveries' cursor does not have that problem.

// maxPage is the largest page the offset-paged lists accept.
const maxPage = 200

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
			r, err := a.ListConversationsWithResponse(ctx, &p)
			if err == nil {
				err = ResponseError(r.HTTPResponse, r.Body)
			}
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
			r, err := a.ReadThreadWithResponse(ctx, line, number, &p)
			if err == nil {
				err = ResponseError(r.HTTPResponse, r.Body)
			}
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
// params.Limit is the page size (default 200).
func (a *API) Deliveries(ctx context.Context, id string, params ListWebhookDeliveriesParams) iter.Seq2[WebhookDelivery, error] {
	return func(yield func(WebhookDelivery, error) bool) {
		if params.Limit == nil {
			params.Limit = Ptr(maxPage)
		}
		for {
			r, err := a.ListWebhookDeliveriesWithResponse(ctx, id, &params)
			if err == nil {
				err = ResponseError(r.HTTPResponse, r.Body)
			}
			if err != nil {
				yield(WebhookDelivery{}, err)
				return
			}
			for _, d := range r.JSON200.Data {
				if !yield(d, nil) {
					return
				}
			}
			if r.JSON200.Next == nil || len(r.JSON200.Data) == 0 {
				return
			}
			params.Before = r.JSON200.Next
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
			r, err := a.SearchCallsWithResponse(ctx, req)
			if err == nil {
				err = ResponseError(r.HTTPResponse, r.Body)
			}
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
			next := page.Offset + len(page.Calls)
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
