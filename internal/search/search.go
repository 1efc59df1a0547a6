// Package search finds what a credential may read by what a person
// remembers of it: words of a text (or their beginnings), any part of a
// conversation's number, and the team's contacts by name, company or number. Its rules live here: how a query is read
// (query.go), which lines and groups a search covers, how results are paged,
// and the snippet of each message found with its matches' offsets
// (snippet.go). The index and its queries are the store's (store/search.go);
// what is a word is package words', shared with the store's indexing.
//
// Results come in groups, each a list of its own kind, newest first, with a
// cursor of its own: contacts (the address book's own search, package
// contacts), conversations (by number) and messages (by text). A group is
// searched when the caller asks for it (or asks for none) and every filter
// given applies to it.
package search

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/contacts"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Limits of a search.
const (
	DefaultLimit  = 20  // hits per group
	MaxLimit      = 100 // hits per group
	MaxQueryRunes = 200
	MaxTerms      = 10
)

// Group names a kind of result.
type Group string

// The groups, in the order a response lists them.
const (
	Contacts      Group = "contacts"
	Conversations Group = "conversations"
	Messages      Group = "messages"
)

// Groups are every group, in order.
var Groups = []Group{Contacts, Conversations, Messages}

// Params are a search request: the query, the filters and the page.
type Params struct {
	Query string
	// Types are the groups asked for; nil: every group the filters apply to.
	Types []string
	// Lines restricts the search to these lines (each one the caller may
	// use); nil: every line the caller may use.
	Lines []string
	// Direction ("in", "out" or ""), From and To (From <= sent < To; zero:
	// open) filter messages only.
	Direction string
	From, To  time.Time
	// Resolved and Unresolved keep conversations (and messages of
	// conversations) in that state.
	Resolved, Unresolved bool
	// Cursor is a previous response's next cursor for one group: the page
	// after it, of that group only.
	Cursor string
	Limit  int
}

// MessageHit is one message found.
type MessageHit struct {
	ID           int64
	Direction    string
	At           time.Time
	Snippet      Snippet
	Conversation domain.Conversation // Key.Line is the whole line
	// Contact is the contact that holds a 1:1 conversation's number, when
	// the credential may read contacts.
	Contact *domain.ContactRef
}

// NumberMatch is where a conversation's number matched: one of its
// participants, and the matched digits' offsets in it (UTF-16 code units,
// which for a number are its characters).
type NumberMatch struct {
	Number     string
	Start, End int
}

// ConversationHit is one conversation found by its number, as the list
// shows it.
type ConversationHit struct {
	domain.ConversationSummary
	Match NumberMatch
}

// Result is one page of each group searched; a group not searched is nil.
// Next holds, for each group that may have more, the cursor of its next page.
type Result struct {
	Contacts      []domain.Contact
	Conversations []ConversationHit
	Messages      []MessageHit
	Next          map[Group]string
}

// Config configures a Service. Store is required; Contacts is the address
// book over Store when nil.
type Config struct {
	Store    *store.Store
	Contacts *contacts.Service
}

// Service is search.
type Service struct {
	store    *store.Store
	contacts *contacts.Service
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Contacts == nil {
		cfg.Contacts = contacts.New(cfg.Store)
	}
	return &Service{store: cfg.Store, contacts: cfg.Contacts}
}

func invalid(format string, args ...any) error { return domain.Errorf(domain.Invalid, format, args...) }

// Search runs one search for p: only lines p may use, only p's account.
func (s *Service) Search(ctx context.Context, p auth.Principal, sp Params) (Result, error) {
	q, err := parseQuery(sp.Query)
	if err != nil {
		return Result{}, err
	}
	groups, cur, err := groupsOf(sp)
	if err != nil {
		return Result{}, err
	}
	if sp.Direction != "" && sp.Direction != "in" && sp.Direction != "out" {
		return Result{}, invalid("direction must be in or out; got %q", sp.Direction)
	}
	if !sp.From.IsZero() && !sp.To.IsZero() && !sp.From.Before(sp.To) {
		return Result{}, invalid("from must be before to")
	}
	if sp.Resolved && sp.Unresolved {
		return Result{}, invalid("resolved and unresolved cannot both be true: a conversation is one or the other")
	}
	if sp.Limit == 0 {
		sp.Limit = DefaultLimit
	}
	lineIDs, byID, err := s.lines(ctx, p, sp.Lines)
	if err != nil {
		return Result{}, err
	}
	res := Result{Next: map[Group]string{}}
	for _, g := range groups {
		switch g {
		case Contacts:
			var before int64
			if cur != nil {
				before = cur.id
			}
			page, err := s.contacts.Search(ctx, p.AccountID, sp.Query, before, sp.Limit+1)
			if err != nil {
				return Result{}, err
			}
			if len(page) > sp.Limit {
				page = page[:sp.Limit]
				res.Next[Contacts] = contactCursor(page[len(page)-1].ID)
			}
			res.Contacts = append([]domain.Contact{}, page...)
		case Conversations:
			res.Conversations = []ConversationHit{}
			if q.digits == "" {
				continue // not a number: no conversation is found by it
			}
			f := store.NumberSearch{AccountID: p.AccountID, UserID: p.UserID, LineIDs: lineIDs, Digits: q.digits,
				Resolved: sp.Resolved, Unresolved: sp.Unresolved, Limit: sp.Limit + 1}
			if cur != nil {
				f.AfterAt, f.AfterID = cur.at, cur.id
			}
			page, err := s.store.SearchConversations(ctx, f)
			if err != nil {
				return Result{}, err
			}
			if len(page) > sp.Limit {
				page = page[:sp.Limit]
				last := page[len(page)-1]
				res.Next[Conversations] = conversationCursor(last.LastMessageAt, last.ID)
			}
			for _, c := range page {
				c.Key.Line = byID[c.Key.Line.ID]
				c.LastMessage = preview(c.LastMessage)
				res.Conversations = append(res.Conversations, ConversationHit{ConversationSummary: c, Match: numberMatch(c.Key.Participants, q.digits)})
			}
		case Messages:
			f := store.MessageSearch{AccountID: p.AccountID, LineIDs: lineIDs, Terms: q.terms, Direction: sp.Direction,
				From: sp.From, To: sp.To, Resolved: sp.Resolved, Unresolved: sp.Unresolved, Limit: sp.Limit + 1}
			if cur != nil {
				f.Before = cur.id
			}
			page, err := s.store.SearchMessages(ctx, f)
			if err != nil {
				return Result{}, err
			}
			if len(page) > sp.Limit {
				page = page[:sp.Limit]
				res.Next[Messages] = messageCursor(page[len(page)-1].ID)
			}
			res.Messages = make([]MessageHit, len(page))
			for i, h := range page {
				c := h.Conversation
				c.Key.Line = byID[h.LineID]
				res.Messages[i] = MessageHit{ID: h.ID, Direction: h.Direction, At: h.CreatedAt, Conversation: c,
					Snippet: snippet(h.Body, q.terms)}
			}
		}
	}
	return res, s.name(ctx, p, &res)
}

// name fills the contact beside each conversation and message found, as
// the inbox's answers show it: one read for the page.
func (s *Service) name(ctx context.Context, p auth.Principal, res *Result) error {
	var numbers []string
	for _, c := range res.Conversations {
		if !c.Key.IsGroup() {
			numbers = append(numbers, c.Key.Number())
		}
	}
	for _, m := range res.Messages {
		if !m.Conversation.Key.IsGroup() {
			numbers = append(numbers, m.Conversation.Key.Number())
		}
	}
	held, err := contacts.Names(ctx, s.store, p, numbers)
	if err != nil || len(held) == 0 {
		return err
	}
	for i, c := range res.Conversations {
		if ref, ok := held[c.Key.Number()]; ok && !c.Key.IsGroup() {
			res.Conversations[i].Contact = &ref
		}
	}
	for i, m := range res.Messages {
		if ref, ok := held[m.Conversation.Key.Number()]; ok && !m.Conversation.Key.IsGroup() {
			res.Messages[i].Contact = &ref
		}
	}
	return nil
}

// lines resolves the lines filter against the lines p may use: the ids to
// search (nil: every line of the account, no filter needed) and every line
// p may use by id.
func (s *Service) lines(ctx context.Context, p auth.Principal, numbers []string) ([]int64, map[int64]domain.Line, error) {
	lines, err := auth.Lines(ctx, s.store, p)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[int64]domain.Line, len(lines))
	for _, l := range lines {
		byID[l.ID] = l
	}
	if numbers != nil {
		ids := []int64{}
		for _, n := range numbers {
			l, err := auth.FindLine(lines, n)
			if err != nil {
				return nil, nil, err
			}
			if !slices.Contains(ids, l.ID) {
				ids = append(ids, l.ID)
			}
		}
		return ids, byID, nil
	}
	all, err := s.store.Lines(ctx, p.AccountID, false)
	if err != nil {
		return nil, nil, err
	}
	if len(all) == len(lines) {
		return nil, byID, nil
	}
	// Only the caller's lines (none at all: an empty filter, nothing found).
	ids := make([]int64, len(lines))
	for i, l := range lines {
		ids[i] = l.ID
	}
	return ids, byID, nil
}

// groupsOf returns the groups a request searches, and the cursor it
// continues (nil for a first page). Contacts belong to the account, not to
// a line or a conversation: no filter applies to them. (Who may search may
// read them: the scope and the role's phone numbers, contacts.CanRead.)
func groupsOf(sp Params) ([]Group, *cursor, error) {
	// The filters that apply to conversations and messages, not contacts.
	var lineFilters []string
	if sp.Lines != nil {
		lineFilters = append(lineFilters, "lines")
	}
	if sp.Resolved {
		lineFilters = append(lineFilters, "resolved")
	}
	if sp.Unresolved {
		lineFilters = append(lineFilters, "unresolved")
	}
	// The filters that apply to messages only.
	var messageOnly []string
	if sp.Direction != "" {
		messageOnly = append(messageOnly, "direction")
	}
	if !sp.From.IsZero() {
		messageOnly = append(messageOnly, "from")
	}
	if !sp.To.IsZero() {
		messageOnly = append(messageOnly, "to")
	}
	var asked []Group
	for _, t := range sp.Types {
		g := Group(t)
		if !slices.Contains(Groups, g) {
			return nil, nil, invalid("types: unknown group %q; the groups are contacts, conversations, messages", t)
		}
		if !slices.Contains(asked, g) {
			asked = append(asked, g)
		}
	}
	var cur *cursor
	if sp.Cursor != "" {
		c, err := parseCursor(sp.Cursor)
		if err != nil {
			return nil, nil, err
		}
		if asked != nil && (len(asked) != 1 || asked[0] != c.group) {
			return nil, nil, invalid("cursor continues the %s group: give types=%s or leave types out", c.group, c.group)
		}
		cur, asked = &c, []Group{c.group}
	}
	if asked != nil {
		if slices.Contains(asked, Contacts) {
			if f := append(lineFilters, messageOnly...); len(f) > 0 {
				return nil, nil, invalid("the contacts group takes no filter: leave out %s, or search the other groups", strings.Join(f, ", "))
			}
		}
		if slices.Contains(asked, Conversations) && len(messageOnly) > 0 {
			return nil, nil, invalid("%s filter(s) messages only: the conversations group cannot take them", strings.Join(messageOnly, ", "))
		}
		slices.SortFunc(asked, func(a, b Group) int { return slices.Index(Groups, a) - slices.Index(Groups, b) })
		return asked, cur, nil
	}
	if len(messageOnly) > 0 {
		return []Group{Messages}, nil, nil
	}
	if len(lineFilters) > 0 {
		return []Group{Conversations, Messages}, nil, nil
	}
	return Groups, nil, nil
}

// cursor is where a group's next page starts: after message id (messages),
// below contact id (contacts), or after the conversation whose newest message is at at, with id
// (conversations).
type cursor struct {
	group Group
	at    time.Time
	id    int64
}

// messageCursor and conversationCursor write a cursor: a letter naming the
// group, then the position. Opaque to clients.
func messageCursor(id int64) string { return "m" + strconv.FormatInt(id, 10) }

func contactCursor(id int64) string { return "k" + strconv.FormatInt(id, 10) }

func conversationCursor(at time.Time, id int64) string {
	return "c" + strconv.FormatInt(at.UnixMicro(), 10) + "." + strconv.FormatInt(id, 10)
}

func parseCursor(s string) (cursor, error) {
	bad := invalid("cursor %q is not a cursor this search returned", s)
	if len(s) > 64 {
		return cursor{}, invalid("cursor is not a cursor this search returned")
	}
	positive := func(v string) (int64, bool) {
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil && n > 0 && strconv.FormatInt(n, 10) == v
	}
	switch {
	case strings.HasPrefix(s, "m"):
		id, ok := positive(s[1:])
		if !ok {
			return cursor{}, bad
		}
		return cursor{group: Messages, id: id}, nil
	case strings.HasPrefix(s, "k"):
		id, ok := positive(s[1:])
		if !ok {
			return cursor{}, bad
		}
		return cursor{group: Contacts, id: id}, nil
	case strings.HasPrefix(s, "c"):
		at, id, found := strings.Cut(s[1:], ".")
		us, ok1 := positive(at)
		n, ok2 := positive(id)
		if !found || !ok1 || !ok2 {
			return cursor{}, bad
		}
		return cursor{group: Conversations, at: time.UnixMicro(us).UTC(), id: n}, nil
	}
	return cursor{}, bad
}
