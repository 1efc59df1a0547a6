package sms

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"switchboard/internal/carrier"
	"switchboard/internal/domain"
	"switchboard/internal/phone"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
)

// The opt-out keywords (CTIA): a text consisting of one of them opts the
// sender out of the line; START or UNSTOP opts them back in.
var (
	stopWords  = map[string]bool{"STOP": true, "STOPALL": true, "UNSUBSCRIBE": true, "CANCEL": true, "END": true, "QUIT": true}
	startWords = map[string]bool{"START": true, "UNSTOP": true}
)

// keyword is text reduced to the word an opt-out check compares: compatibility
// forms folded (full-width ＳＴＯＰ is STOP), invisible format and control
// characters dropped (a zero-width space or BOM a phone added), then spaces and
// punctuation trimmed from both ends ("STOP.", "STOP !", "'stop'"), upper-cased.
// A sentence stays a sentence: only a text that is the keyword counts.
func keyword(text string) string {
	if len(text) > 64 {
		return "" // a keyword text is short; a long one is a sentence
	}
	text = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) || (unicode.IsControl(r) && !unicode.IsSpace(r)) {
			return -1
		}
		return r
	}, norm.NFKC.String(text))
	return strings.ToUpper(strings.TrimFunc(text, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }))
}

// storable is a carrier's text as it is stored: valid UTF-8 without the NUL
// character, which PostgreSQL holds in no text (SQLite would). What a
// carrier reports is never refused for its content, or a customer's text
// would be lost: each NUL, and each byte that is not UTF-8, becomes U+FFFD,
// the replacement character (docs/decisions.md). The API refuses a NUL
// instead (400): its caller can send again.
func storable(text string) string {
	if utf8.ValidString(text) && strings.IndexByte(text, 0) < 0 {
		return text
	}
	return strings.ReplaceAll(strings.ToValidUTF8(text, "\uFFFD"), "\x00", "\uFFFD")
}

// Receipt implements carrier.Sink: it stores a delivery report. A report for
// an unknown message is dropped (returning an error would make the carrier
// retry forever).
func (s *Service) Receipt(ctx context.Context, r carrier.Receipt) error {
	r.Status, r.Error = storable(r.Status), storable(r.Error)
	at := r.At
	if at.IsZero() {
		at = time.Now()
	}
	err := s.applyReceipt(ctx, r, at)
	if domain.IsNotFound(err) {
		s.log.Warn("receipt for unknown message dropped", "message_id", r.MessageID)
		return nil
	}
	if err == nil {
		s.evidenceArrived(r.MessageID)
	}
	if err != nil {
		// A receipt is evidence that the carrier took the message, and for a
		// message still pending it is what charges it: keep trying after the
		// database refused it, as well as telling the carrier it failed (its
		// own retry, if any, is harmless: the same report twice changes
		// nothing).
		key := "receipt:" + strconv.FormatInt(r.MessageID, 10) + ":" + r.Status + ":" + r.Error
		s.settle.start(key, r.MessageID, func(ctx context.Context) error {
			err := s.applyReceipt(ctx, r, at)
			if domain.IsNotFound(err) {
				return nil
			}
			return err
		}, func(err error) {
			s.log.Error("delivery receipt not recorded: the process stopped while the database refused it",
				"message_id", r.MessageID, "status", r.Status, "err", err)
		})
	}
	return err
}

// applyReceipt builds the events report r may write, from its message's line
// and recipients, and has the store apply it.
func (s *Service) applyReceipt(ctx context.Context, r carrier.Receipt, at time.Time) error {
	line, to, err := s.partiesOf(ctx, r.MessageID)
	if err != nil {
		return err
	}
	sent, err := smsevent.Sent(r.MessageID, line, to)
	if err != nil {
		return err
	}
	delivery, err := smsevent.Delivery(r.MessageID, line, to, r.Status, r.Error, at)
	if err != nil {
		return err
	}
	return s.store.ApplyReceipt(ctx, store.Receipt{ID: r.MessageID, Status: r.Status, Error: r.Error, At: at, Sent: sent, Delivery: delivery})
}

// Inbound implements carrier.Sink: it stores a text someone sent to a line,
// applying STOP/START keywords.
func (s *Service) Inbound(ctx context.Context, in carrier.Inbound) error {
	to, ok := phone.Normalize(in.To)
	from, ok2 := phone.Normalize(in.From)
	if !ok || !ok2 {
		s.log.Warn("inbound text with unusable numbers dropped")
		return nil
	}
	line, err := s.store.LineByNumber(ctx, to)
	if domain.IsNotFound(err) || (err == nil && !line.SMSEnabled) {
		// Never guessed at: logged and counted (UnknownInbound), and
		// answered as taken so that the carrier does not send it forever.
		s.unknownInbound.Add(1)
		s.log.Warn("inbound text for a number that is not an SMS line dropped", "to", to)
		return nil
	}
	if err != nil {
		return err
	}
	// The conversation is keyed by every party but the line itself.
	participants := []string{from}
	for _, p := range in.Participants {
		if n, ok := phone.Normalize(p); ok && n != line.Number && !slices.Contains(participants, n) {
			participants = append(participants, n)
		}
	}
	slices.Sort(participants)
	readers, err := s.readers(ctx, line)
	if err != nil {
		return err
	}
	// The keyword is read from the text as sent: a NUL is a control
	// character it ignores ("STOP\x00" opts out), U+FFFD would not be.
	kw := keyword(in.Text)
	media := slices.Clone(in.Media)
	for i, m := range media {
		media[i] = storable(m)
	}
	// The message is dated when Switchboard stores it, not by the carrier's
	// clock (Kannel's ts has whole seconds and the SMSC's skew), so a
	// conversation's order by time and by id agree.
	text := store.Inbound{
		Line: line, From: from, Participants: participants, Body: storable(in.Text), Media: media,
		OptOut: stopWords[kw], OptIn: startWords[kw], Readers: readers,
	}
	if err := smsevent.SetReceived(&text); err != nil {
		return err
	}
	_, err = s.store.StoreInbound(ctx, text)
	return err
}

// UnknownInbound counts the inbound texts dropped since start because no
// SMS line holds the number they name.
func (s *Service) UnknownInbound() int64 { return s.unknownInbound.Load() }

// readers returns the users who may see line (domain.LineReaders).
func (s *Service) readers(ctx context.Context, line domain.Line) ([]int64, error) {
	users, err := s.store.Users(ctx, line.AccountID)
	if err != nil {
		return nil, err
	}
	roles, err := s.store.Roles(ctx, line.AccountID)
	if err != nil {
		return nil, err
	}
	return domain.LineReaders(users, roles, line), nil
}

// Reconcile resolves outbound messages left pending longer than age (the
// process stopped between writing the intent and recording the carrier's
// answer). With no evidence that the carrier accepted them they are
// abandoned, uncharged; a receipt arriving later still marks them sent and
// charges them, because the receipt proves acceptance. A send this process
// is still making is not interrupted, however old: it is skipped.
func (s *Service) Reconcile(ctx context.Context, age time.Duration) (int, error) {
	before := time.Now().Add(-age)
	ids, err := s.store.PendingBefore(ctx, before)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if _, sending := s.inflight.Load(id); sending || s.settle.settling(id) {
			continue
		}
		done, err := s.store.Abandon(ctx, id, before)
		if err != nil {
			return n, err
		}
		if done {
			n++
		}
	}
	if n > 0 {
		s.log.Warn("abandoned messages left pending by an interrupted send", "count", n)
	}
	return n, nil
}
