// Package inbox is the shared inbox: a team reads and answers its customers'
// texts together. It lists conversations (newest first, with filters), reads
// threads, keeps each user's read state and unread counts, and lets the team
// resolve, reopen, assign, comment on and delete conversations.
//
// A conversation has no id: it is a line and the set of other parties. Read
// state is personal: an OAuth token acts for its user; an API key, which is
// no person, sees the team's view (a text is unread until some user has read
// the thread past it) and cannot change personal state.
package inbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/auth"
	"switchboard/internal/contacts"
	"switchboard/internal/domain"
	"switchboard/internal/phone"
	"switchboard/internal/store"
	"switchboard/internal/team"
)

// Limits of the inbox endpoints.
const (
	DefaultLimit    = 50
	MaxLimit        = 200
	MaxOffset       = 10_000_000
	MaxMarkIDs      = 50   // message ids per read-state request
	MaxCommentBytes = 2000 // an internal note, as long as a text
	MaxParticipants = 50   // numbers addressing one group thread
	PreviewRunes    = 160  // lastMessage is the newest text cut to this many characters
)

// MediaStore removes hosted attachments of deleted messages.
type MediaStore interface {
	Delete(ctx context.Context, name string) error
}

// Config configures a Service. Store is required.
type Config struct {
	Store *store.Store
	// Media, when set, removes the attachments of deleted messages.
	Media MediaStore
	// MediaURL turns a stored attachment's name into its public URL; nil
	// reports names as they are.
	MediaURL func(name string) string
	Log      *slog.Logger
}

// Service is the inbox.
type Service struct {
	store    *store.Store
	media    MediaStore
	mediaURL func(string) string
	log      *slog.Logger
}

// New returns a Service with cfg's defaults applied.
func New(cfg Config) *Service {
	s := &Service{store: cfg.Store, media: cfg.Media, mediaURL: cfg.MediaURL, log: cfg.Log}
	if s.mediaURL == nil {
		s.mediaURL = func(name string) string { return name }
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return s
}

func invalid(format string, args ...any) error { return domain.Errorf(domain.Invalid, format, args...) }

// Address names a conversation as a request does: the line, the other
// party's number and, for a group thread, every participant.
type Address struct {
	Line              string
	Number            string
	GroupParticipants []string
}

// key resolves a to a conversation key p may use.
func (s *Service) key(ctx context.Context, p auth.Principal, a Address) (domain.ConversationKey, error) {
	line, err := auth.Line(ctx, s.store, p, a.Line)
	if err != nil {
		return domain.ConversationKey{}, err
	}
	n, ok := phone.Normalize(a.Number)
	if !ok {
		return domain.ConversationKey{}, invalid("number %q is not a phone number", a.Number)
	}
	parts := []string{n}
	if len(a.GroupParticipants) > MaxParticipants {
		return domain.ConversationKey{}, invalid("groupParticipants has %d numbers; at most %d", len(a.GroupParticipants), MaxParticipants)
	}
	for _, g := range a.GroupParticipants {
		gn, ok := phone.Normalize(g)
		if !ok {
			return domain.ConversationKey{}, invalid("groupParticipants: %q is not a phone number", g)
		}
		// The line is not a participant of its own threads.
		if gn != line.Number && !slices.Contains(parts, gn) {
			parts = append(parts, gn)
		}
	}
	if n == line.Number {
		return domain.ConversationKey{}, invalid("number %s is the line itself", n)
	}
	slices.Sort(parts)
	key := domain.ConversationKey{Line: line, Participants: parts}
	return key, s.addressable(ctx, key, n)
}

// addressable refuses a conversation with a number that is not dialable, as
// blocking one is refused: a path such as /1 or a zero-padded number would
// otherwise create conversation state for a party that can never text. A
// thread that already exists stays addressable whatever its numbers: an
// inbound text from a short code starts one, and its people must be able to
// read and work it. number is the path's number, normalized.
func (s *Service) addressable(ctx context.Context, key domain.ConversationKey, number string) error {
	i := slices.IndexFunc(key.Participants, func(n string) bool { return !phone.Dialable(n) })
	if i < 0 {
		return nil
	}
	_, _, err := s.store.Conversation(ctx, key)
	if !domain.IsNotFound(err) {
		return err
	}
	odd, field := key.Participants[i], "groupParticipants: number"
	if odd == number {
		field = "number"
	}
	if len(odd) > 20 {
		odd = fmt.Sprintf("of %d digits", len(odd))
	}
	return invalid("%s %s is not a dialable phone number: give the country code and the number, at most 15 digits (E.164)", field, odd)
}

// ListParams are the filters and page of a conversation list.
type ListParams struct {
	Lines        []string // nil: every line the caller may use
	Unread       bool
	Unresolved   bool
	Resolved     bool // beyond the spec: the resolved ones only
	AssignedToMe bool
	Unassigned   bool
	Limit        int
	Offset       int
}

// List returns one page of the conversations p may see, newest first.
func (s *Service) List(ctx context.Context, p auth.Principal, lp ListParams) ([]domain.ConversationSummary, error) {
	lines, err := auth.Lines(ctx, s.store, p)
	if err != nil {
		return nil, err
	}
	if lp.Resolved && lp.Unresolved {
		return nil, invalid("resolved and unresolved cannot both be true: a conversation is one or the other")
	}
	if lp.AssignedToMe && !p.IsUser() {
		return nil, invalid("assignedToMe needs a user credential (an OAuth token); an API key is no person and owns nothing")
	}
	f := store.ConversationFilter{AccountID: p.AccountID, UserID: p.UserID, Unread: lp.Unread, Unresolved: lp.Unresolved,
		Resolved: lp.Resolved, Unassigned: lp.Unassigned, Limit: lp.Limit, Offset: lp.Offset}
	if lp.AssignedToMe {
		f.AssignedTo = p.UserID
	}
	byID := map[int64]domain.Line{}
	for _, l := range lines {
		byID[l.ID] = l
	}
	if lp.Lines != nil {
		f.LineIDs = []int64{}
		for _, n := range lp.Lines {
			l, err := auth.FindLine(lines, n)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(f.LineIDs, l.ID) {
				f.LineIDs = append(f.LineIDs, l.ID)
			}
		}
	} else {
		// Every line of the account: no line filter at all, so the account's
		// index answers alone. Otherwise only the caller's lines.
		all, err := s.store.Lines(ctx, p.AccountID, false)
		if err != nil {
			return nil, err
		}
		if len(all) != len(lines) {
			f.LineIDs = make([]int64, len(lines))
			for i, l := range lines {
				f.LineIDs[i] = l.ID
			}
		}
	}
	page, err := s.store.ListConversations(ctx, f)
	if err != nil {
		return nil, err
	}
	numbers := make([]string, 0, len(page))
	for i := range page {
		page[i].Key.Line = byID[page[i].Key.Line.ID]
		page[i].LastMessage = Preview(page[i].LastMessage)
		if !page[i].Key.IsGroup() {
			numbers = append(numbers, page[i].Key.Number())
		}
	}
	// The names beside the numbers (issue 33): one read for the page,
	// inside the first page's load, so that a kept first page has them.
	held, err := contacts.Names(ctx, s.store, p, numbers)
	if err != nil {
		return nil, err
	}
	for i := range page {
		if ref, ok := held[page[i].Key.Number()]; ok && !page[i].Key.IsGroup() {
			page[i].Contact = &ref
		}
	}
	return page, nil
}

// Preview cuts text to PreviewRunes characters.
func Preview(text string) string {
	if utf8.RuneCountInString(text) <= PreviewRunes {
		return text
	}
	n := 0
	for i := range text {
		if n == PreviewRunes {
			return text[:i]
		}
		n++
	}
	return text
}

// ThreadParams address a thread and its page.
type ThreadParams struct {
	Address
	MarkRead bool
	Limit    int
	Offset   int
}

// conversation returns the stored conversation of key, not_found when it has
// no visible message (never texted, or deleted).
func (s *Service) conversation(ctx context.Context, key domain.ConversationKey) (domain.Conversation, error) {
	c, visible, err := s.store.Conversation(ctx, key)
	if err != nil {
		return c, err
	}
	if !visible {
		return c, domain.Errorf(domain.NotFound, "conversation not found")
	}
	return c, nil
}

// Thread reads one page of a thread, newest first. With MarkRead the whole
// thread is first marked read for the caller (for an API key: for the team view).
func (s *Service) Thread(ctx context.Context, p auth.Principal, tp ThreadParams) (domain.Thread, error) {
	key, err := s.key(ctx, p, tp.Address)
	if err != nil {
		return domain.Thread{}, err
	}
	c, err := s.conversation(ctx, key)
	if err != nil {
		return domain.Thread{}, err
	}
	if tp.MarkRead {
		if err := s.markThreadRead(ctx, p, key, c.ID); err != nil {
			return domain.Thread{}, err
		}
	}
	msgs, err := s.store.ThreadPage(ctx, c, p.UserID, tp.Limit, tp.Offset)
	if err != nil {
		return domain.Thread{}, err
	}
	s.urls(msgs)
	t := domain.Thread{Key: key, State: c, Messages: msgs, MarkedRead: tp.MarkRead}
	return t, s.name(ctx, p, &t)
}

// name fills t's Contact: the contact that holds a 1:1 thread's number.
func (s *Service) name(ctx context.Context, p auth.Principal, t *domain.Thread) error {
	if t.Key.IsGroup() {
		return nil
	}
	held, err := contacts.Names(ctx, s.store, p, []string{t.Key.Number()})
	if ref, ok := held[t.Key.Number()]; ok {
		t.Contact = &ref
	}
	return err
}

// markThreadRead marks the thread read for p. It is the hot read's write:
// a thread already read (the usual case) costs one read, and no write, no
// event, not even the event's encoding.
func (s *Service) markThreadRead(ctx context.Context, p auth.Principal, key domain.ConversationKey, convID int64) error {
	done, err := s.store.ThreadIsRead(ctx, convID, p.UserID)
	if err != nil || done {
		return err
	}
	ch, err := readChange(p, key)
	if err != nil {
		return err
	}
	return s.store.MarkThreadRead(ctx, convID, p.UserID, ch)
}

// ThreadAround returns the page (of limit messages, newest first) that
// holds message id; not_found when id is not a message of the thread.
func (s *Service) ThreadAround(ctx context.Context, p auth.Principal, a Address, id int64, limit int) (domain.Thread, error) {
	key, err := s.key(ctx, p, a)
	if err != nil {
		return domain.Thread{}, err
	}
	c, err := s.conversation(ctx, key)
	if err != nil {
		return domain.Thread{}, err
	}
	pos, err := s.store.MessagePosition(ctx, c.ID, id)
	if err != nil {
		return domain.Thread{}, err
	}
	msgs, err := s.store.ThreadPage(ctx, c, p.UserID, limit, pos/limit*limit)
	if err != nil {
		return domain.Thread{}, err
	}
	s.urls(msgs)
	t := domain.Thread{Key: key, State: c, Messages: msgs}
	return t, s.name(ctx, p, &t)
}

func (s *Service) urls(msgs []domain.ThreadMessage) {
	for i := range msgs {
		for j, name := range msgs[i].Media {
			msgs[i].Media[j] = s.mediaURL(name)
		}
	}
}

func needUser(p auth.Principal, what string) error {
	if !p.IsUser() {
		return invalid("%s changes a person's read state and needs a user credential (an OAuth token); an API key has none", what)
	}
	return nil
}

// MarkMessages sets the caller's read state of up to MaxMarkIDs messages of a thread.
func (s *Service) MarkMessages(ctx context.Context, p auth.Principal, a Address, ids []int64, read bool) error {
	if err := needUser(p, "marking messages read or unread"); err != nil {
		return err
	}
	if len(ids) == 0 || len(ids) > MaxMarkIDs {
		return invalid("messageIds must list 1 to %d message ids; got %d", MaxMarkIDs, len(ids))
	}
	key, err := s.key(ctx, p, a)
	if err != nil {
		return err
	}
	distinct := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(distinct, id) {
			distinct = append(distinct, id)
		}
	}
	c, err := s.conversation(ctx, key)
	if err != nil {
		return err
	}
	kind := domain.ConversationUnread
	if read {
		kind = domain.ConversationRead
	}
	e := newEvent(kind, p, key)
	e.MessageIDs = distinct
	t, err := template(e, p.UserID) // personal: the user's own state
	if err != nil {
		return err
	}
	// Written only if one of them changed state.
	return s.store.MarkMessages(ctx, c.ID, p.UserID, distinct, read, store.Change{Changed: t})
}

// MarkLineRead marks everything on a line read for the caller (since: only
// what was sent at or after it; zero for all).
func (s *Service) MarkLineRead(ctx context.Context, p auth.Principal, line string, since time.Time) error {
	l, err := auth.Line(ctx, s.store, p, line)
	if err != nil {
		return err
	}
	if err := needUser(p, "POST /sms/lines/{line}/read"); err != nil {
		return err
	}
	convs, err := s.store.UnreadConversations(ctx, l.ID, p.UserID)
	if err != nil || len(convs) == 0 {
		return err
	}
	reads := make([]store.LineRead, len(convs))
	for i, c := range convs {
		c.Key.Line = l
		reads[i].ConversationID = c.ID
		if reads[i].Change, err = readChange(p, c.Key); err != nil {
			return err
		}
	}
	return s.store.MarkLineRead(ctx, l.ID, p.UserID, since, reads)
}

// Unread counts unread inbound texts per line: lines (nil: every line p
// may use), each reported, zeros included, in the order of the line list.
func (s *Service) Unread(ctx context.Context, p auth.Principal, lines []string, since time.Time) ([]domain.LineUnread, error) {
	mine, err := auth.Lines(ctx, s.store, p)
	if err != nil {
		return nil, err
	}
	report := mine
	if lines != nil {
		report = nil
		for _, n := range lines {
			l, err := auth.FindLine(mine, n)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(report, func(r domain.Line) bool { return r.ID == l.ID }) {
				report = append(report, l)
			}
		}
	}
	counts, err := s.store.UnreadCounts(ctx, p.AccountID, p.UserID, since)
	if err != nil {
		return nil, err
	}
	out := make([]domain.LineUnread, len(report))
	for i, l := range report {
		out[i] = domain.LineUnread{Line: l.Number, Count: counts[l.ID]}
	}
	return out, nil
}

// user checks that id is a user of p's account, as a request field names it.
func (s *Service) user(ctx context.Context, p auth.Principal, field string, id int64) error {
	if id <= 0 {
		return invalid("%s %d is not a user of this account", field, id)
	}
	_, err := s.store.User(ctx, p.AccountID, id)
	if domain.IsNotFound(err) {
		return invalid("%s %d is not a user of this account", field, id)
	}
	return err
}

func checkComment(text string, required bool) error {
	if required && strings.TrimSpace(text) == "" {
		return invalid("comment is required and must not be blank")
	}
	if len(text) > MaxCommentBytes {
		return invalid("comment is %d bytes; at most %d", len(text), MaxCommentBytes)
	}
	return nil
}

// Resolve marks a conversation resolved. An OAuth token credits its own
// user; an API key credits resolvedBy (nil: nobody). A comment is saved with
// it. Resolving a resolved conversation changes nothing but the comment.
func (s *Service) Resolve(ctx context.Context, p auth.Principal, a Address, resolvedBy *int64, comment string) (domain.Conversation, error) {
	if err := checkComment(comment, false); err != nil {
		return domain.Conversation{}, err
	}
	key, err := s.key(ctx, p, a)
	if err != nil {
		return domain.Conversation{}, err
	}
	by := p.UserID
	if !p.IsUser() && resolvedBy != nil {
		if err := s.user(ctx, p, "resolvedBy", *resolvedBy); err != nil {
			return domain.Conversation{}, err
		}
		by = *resolvedBy
	}
	comment = strings.TrimSpace(comment)
	// Resolving a resolved conversation re-stamps nothing: no event, unless
	// a comment is saved (then the comment's).
	e := newEvent(domain.ConversationResolved, p, key)
	e.Comment = comment
	ch, err := changed(e)
	if err != nil {
		return domain.Conversation{}, err
	}
	if comment != "" {
		e.Event = domain.ConversationCommented
		if ch.Unchanged, err = template(e, 0); err != nil {
			return domain.Conversation{}, err
		}
	}
	return s.store.Resolve(ctx, store.StateChange{Key: key, Actor: p.UserID, Change: ch}, by, comment, by)
}

// Reopen marks a conversation unresolved.
func (s *Service) Reopen(ctx context.Context, p auth.Principal, a Address) (domain.Conversation, error) {
	key, err := s.key(ctx, p, a)
	if err != nil {
		return domain.Conversation{}, err
	}
	// Reopening an open conversation changes nothing: no event.
	ch, err := changed(newEvent(domain.ConversationReopened, p, key))
	if err != nil {
		return domain.Conversation{}, err
	}
	return s.store.Reopen(ctx, store.StateChange{Key: key, Actor: p.UserID, Change: ch})
}

// Assign gives a conversation to a user of the account (nil: to nobody).
func (s *Service) Assign(ctx context.Context, p auth.Principal, a Address, userID *int64) (domain.Conversation, error) {
	key, err := s.key(ctx, p, a)
	if err != nil {
		return domain.Conversation{}, err
	}
	var to int64
	if userID != nil {
		if err := s.user(ctx, p, "userId", *userID); err != nil {
			return domain.Conversation{}, err
		}
		to = *userID
	}
	// Assigning to the owner (or to nobody again) changes nothing: no event.
	ch, err := changed(newEvent(domain.ConversationAssigned, p, key))
	if err != nil {
		return domain.Conversation{}, err
	}
	return s.store.Assign(ctx, store.StateChange{Key: key, Actor: p.UserID, Change: ch}, to)
}

// Comment saves an internal note on a conversation and returns, with the
// state, the people it mentions (team.Mentions: teammates who can work the
// line). Each of them but the author gets a personal
// conversation.mentioned with the note, in the same transaction.
func (s *Service) Comment(ctx context.Context, p auth.Principal, a Address, text string) (domain.Conversation, []int64, error) {
	if err := checkComment(text, true); err != nil {
		return domain.Conversation{}, nil, err
	}
	key, err := s.key(ctx, p, a)
	if err != nil {
		return domain.Conversation{}, nil, err
	}
	text = strings.TrimSpace(text)
	people, err := team.LineTeam(ctx, s.store, key.Line)
	if err != nil {
		return domain.Conversation{}, nil, err
	}
	mentions := team.Mentions(text, people)
	e := newEvent(domain.ConversationCommented, p, key)
	e.Comment, e.Mentions = text, mentions
	ch, err := changed(e)
	if err != nil {
		return domain.Conversation{}, nil, err
	}
	for _, id := range mentions {
		if id == p.UserID {
			continue // one's own note notifies nobody of it
		}
		m := newEvent(domain.ConversationMentioned, p, key)
		m.Comment, m.Mentions = text, mentions
		t, err := template(m, id)
		if err != nil {
			return domain.Conversation{}, nil, err
		}
		ch.Also = append(ch.Also, t)
	}
	c, err := s.store.AddComment(ctx, store.StateChange{Key: key, Actor: p.UserID, Change: ch}, text)
	return c, mentions, err
}

// Comments lists a conversation's notes, oldest first (none for a pair
// with no stored state).
func (s *Service) Comments(ctx context.Context, p auth.Principal, a Address) ([]domain.Comment, error) {
	key, err := s.key(ctx, p, a)
	if err != nil {
		return nil, err
	}
	c, _, err := s.store.Conversation(ctx, key)
	if domain.IsNotFound(err) {
		return []domain.Comment{}, nil
	}
	if err != nil {
		return nil, err
	}
	return s.store.Comments(ctx, c.ID)
}

// deletable refuses deletion when the account restricts deleting SMS,
// whatever the credential's scopes.
func (s *Service) deletable(ctx context.Context, p auth.Principal) error {
	acct, err := s.store.Account(ctx, p.AccountID)
	if err != nil {
		return err
	}
	if acct.RestrictSMSDelete {
		return domain.Errorf(domain.PermissionDenied, "this account does not allow deleting text messages")
	}
	return nil
}

// DeleteConversation erases a conversation for good; charges stay in the ledger.
func (s *Service) DeleteConversation(ctx context.Context, p auth.Principal, a Address) error {
	key, err := s.key(ctx, p, a)
	if err != nil {
		return err
	}
	if err := s.deletable(ctx, p); err != nil {
		return err
	}
	c, err := s.conversation(ctx, key)
	if err != nil {
		return err
	}
	ch, err := changed(newEvent(domain.ConversationDeleted, p, key))
	if err != nil {
		return err
	}
	media, err := s.store.DeleteConversation(ctx, c.ID, ch)
	if err != nil {
		return err
	}
	s.dropMedia(ctx, media)
	return nil
}

// DeleteMessage erases one message of a thread for good; its charge stays in the ledger.
func (s *Service) DeleteMessage(ctx context.Context, p auth.Principal, a Address, id int64) error {
	key, err := s.key(ctx, p, a)
	if err != nil {
		return err
	}
	if err := s.deletable(ctx, p); err != nil {
		return err
	}
	c, err := s.conversation(ctx, key)
	if err != nil {
		return err
	}
	e := newEvent(domain.MessageDeleted, p, key)
	e.MessageID = id
	ch, err := changed(e)
	if err != nil {
		return err
	}
	media, err := s.store.DeleteMessage(ctx, c.ID, id, ch)
	if err != nil {
		return err
	}
	s.dropMedia(ctx, media)
	return nil
}

// dropMedia removes deleted messages' attachments. The messages no longer
// point at them, so a failure only leaves an unreachable-by-API file; it is
// logged (without the name, which is the file's only protection).
func (s *Service) dropMedia(ctx context.Context, names []string) {
	if s.media == nil {
		return
	}
	for _, n := range names {
		if err := s.media.Delete(ctx, n); err != nil {
			s.log.WarnContext(ctx, "delete attachment of a deleted message", "err", err)
		}
	}
}
