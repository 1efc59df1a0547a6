package sms

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"switchboard/internal/auth"
	"switchboard/internal/carrier"
	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/phone"
	"switchboard/internal/segment"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
)

// Limits of POST /sms/messages.
const (
	MaxRecipients    = 20  // distinct, after normalization and de-duplication
	MaxToEntries     = 100 // raw entries, duplicates included: bounds the work per request
	MaxMessageBytes  = 2000
	MaxAttachments   = 10
	MaxAttachmentLen = 5 << 20 // decoded bytes
)

// DefaultCarrierTimeout is Config.CarrierTimeout's default.
const DefaultCarrierTimeout = 30 * time.Second

// MediaStore keeps uploaded attachments and gives them public URLs.
type MediaStore interface {
	Put(ctx context.Context, data []byte, contentType, ext string) (string, error)
	Delete(ctx context.Context, name string) error
}

// Config is what the SMS service needs. Store and Carrier are required.
type Config struct {
	Store   *store.Store
	Carrier carrier.Carrier
	// Media keeps attachments; without it a send with attachments fails.
	Media MediaStore
	// MediaURL turns a stored attachment's name into its public URL; nil
	// uses the name as it is.
	MediaURL func(name string) string
	// Log receives the service's warnings; nil discards them.
	Log *slog.Logger
	// Fault, when set, is called at each step of a send ("before-intent",
	// "after-intent", "after-carrier"); tests use it to inject failures. An
	// error it returns ends the send there, as a crash would (without
	// recording an outcome); to make an HTTP client see a dropped connection,
	// as after a real crash, panic with http.ErrAbortHandler instead.
	Fault func(step string) error
	// CarrierTimeout bounds how long a send waits for the carrier: for its
	// answer and, when the answer is lost, for evidence that it took the
	// message (its delivery receipt). 0 means DefaultCarrierTimeout. The
	// reconciler's age must be longer, so that no node abandons a message
	// another is still sending.
	CarrierTimeout time.Duration
	// Now is the clock that scheduled messages are checked and dispatched
	// by: time.Now by default. Tests set it, with the store's
	// (store.SetClock), to make messages due without waiting.
	Now func() time.Time
}

// Service sends messages, lists the lines they are sent from and receives
// what the carrier reports back.
type Service struct {
	store     *store.Store
	carrier   carrier.Carrier
	media     MediaStore
	mediaURL  func(name string) string
	log       *slog.Logger
	faultHook func(step string) error
	// carrierTimeout is Config.CarrierTimeout with its default applied.
	carrierTimeout time.Duration
	// evidence holds, for each send waiting on an unknown carrier outcome,
	// a channel that a receipt for its message closes.
	evidence sync.Map // message id → chan struct{}

	// inflight holds the ids of messages this process is sending (intent
	// written, outcome not yet): the reconciler leaves them alone however
	// long the carrier takes.
	inflight sync.Map
	// settle retries recording evidence of acceptance that the database
	// refused (see settler).
	settle settler
	// parties remembers what the receipts of this process's sends build
	// their events from.
	parties parties
	// now is Config.Now with its default applied.
	now func() time.Time
	// unknownInbound counts inbound texts for numbers no line holds.
	unknownInbound atomic.Int64
}

// New builds the service, applying Config's defaults.
func New(cfg Config) *Service {
	s := &Service{store: cfg.Store, carrier: cfg.Carrier, media: cfg.Media, mediaURL: cfg.MediaURL, log: cfg.Log, faultHook: cfg.Fault,
		carrierTimeout: cfg.CarrierTimeout}
	if s.carrierTimeout <= 0 {
		s.carrierTimeout = DefaultCarrierTimeout
	}
	if s.mediaURL == nil {
		s.mediaURL = func(name string) string { return name }
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now = cfg.Now; s.now == nil {
		s.now = time.Now
	}
	return s
}

// Send validates, prices (plan, as Quote does) and sends one request. The outcome is SendCreated
// when a message was sent and SendSkipped when every recipient was skipped.
// Errors mean nothing was sent or charged. With idem (from BeginIdempotent),
// the result is recorded under the Idempotency-Key: with the intent, in its
// transaction, when a message is sent.
//
// The money guarantee: the intent (message pending, price fixed) is durable
// before the carrier is called; the charge is written in the same
// transaction that marks the message sent; a refusal marks it failed and
// charges nothing. A crash in between leaves a pending message that a
// receipt (evidence of acceptance) or the reconciler resolves.
func (s *Service) Send(ctx context.Context, p auth.Principal, req domain.SendRequest, idem *Idempotency) (*domain.SendResult, domain.SendOutcome, error) {
	pl, err := s.plan(ctx, p, req)
	if err != nil {
		return nil, "", err
	}
	res, line, to, att := pl.res, pl.line, pl.to, pl.att
	if len(to) == 0 {
		if idem != nil {
			s.finishIdempotent(ctx, idem, record{Outcome: domain.SendSkipped, Result: res})
		}
		return res, domain.SendSkipped, nil
	}
	msg := pl.msg
	if err := s.fault("before-intent"); err != nil {
		return nil, "", err
	}
	var hosted []domain.HostedMedia
	names, err := s.upload(ctx, att)
	if err != nil {
		return nil, "", err
	}
	for i, n := range names {
		hosted = append(hosted, domain.HostedMedia{Name: n, AccountID: p.AccountID, ContentType: att[i].contentType, Size: int64(len(att[i].data)), CreatedBy: p.UserID})
	}
	for _, n := range names {
		msg.Media = append(msg.Media, s.mediaURL(n))
	}
	res.Messages = append(res.Messages, msg)

	// From here on the send runs to completion even if the client goes away:
	// its outcome must be recorded either way.
	ctx = context.WithoutCancel(ctx)
	out := &store.Outbound{
		AccountID: p.AccountID, LineID: line.ID, From: line.Number, To: to, Participants: strings.Join(sortedCopy(to), ","),
		Body: req.Message, Media: names, Hosted: hosted, Type: msg.Type, Units: msg.Units,
		UnitPrice: int64(msg.UnitPrice), Price: int64(msg.Price), SentBy: p.UserID,
	}
	if idem != nil {
		// The result is stored before its message id exists: the record
		// keeps the id beside it (see replayOf).
		data, err := json.Marshal(record{Outcome: domain.SendCreated, Result: res})
		if err != nil {
			s.discard(names)
			return nil, "", fmt.Errorf("sms: idempotency record: %w", err)
		}
		out.Idempotency = &store.IdempotencyLink{Claim: idem.claim, Data: data}
	}
	id, err := s.store.CreateOutbound(ctx, out)
	if err != nil {
		s.discard(names)
		return nil, "", err
	}
	res.Messages[0].ID = id
	s.inflight.Store(id, struct{}{})
	defer s.inflight.Delete(id)
	if err := s.fault("after-intent"); err != nil {
		return nil, "", err // the reconciler resolves the pending message
	}

	switch outcome, err := s.deliver(ctx, out, id, carrier.Message{ID: id, From: line.Number, To: to, Text: req.Message, Media: msg.Media}); {
	case err != nil:
		return nil, "", err
	case outcome == carrierUnknown:
		// No evidence either way: the message stays pending (charged if its
		// receipt ever comes, abandoned uncharged by the reconciler if not)
		// and the client is told exactly that (see docs/decisions.md).
		res.Messages[0].Status = domain.StatusPending
		return res, domain.SendPending, nil
	case outcome == carrierRefused:
		status, err := s.store.MarkUnsent(ctx, id, domain.StatusFailed)
		switch {
		case err != nil:
			// Left pending: the reconciler will abandon it. Still nothing charged.
			s.log.Error("record carrier refusal", "message_id", id, "err", err)
		case status == domain.StatusSent:
			// A delivery receipt arrived before the carrier's answer failed
			// (a lost reply, a timeout): the carrier has the message and the
			// receipt charged it, so this is a success, not a 503.
			s.log.Warn("carrier answer failed but a delivery receipt proves acceptance; answering sent", "message_id", id)
			return res, domain.SendCreated, nil
		}
		if status == domain.StatusFailed {
			s.dropFailedMedia(ctx, id) // nobody was given their URLs
		}
		return nil, "", domain.Errorf(domain.Unavailable, "the carrier did not accept the message; nothing was sent or charged")
	}
	return res, domain.SendCreated, nil
}

// sendPlan is a send request validated and priced, with nothing written:
// what Send carries out and Quote answers. Both take it from plan, so a
// quote cannot drift from the send it previews.
type sendPlan struct {
	att  []upload
	line domain.Line
	// to is the recipients to dial, normalized; empty when every one was
	// skipped (then msg is zero and nothing is priced).
	to []string
	// res is the send's answer so far: from, billing (final) and skipped;
	// no messages yet.
	res *domain.SendResult
	// msg is the message priced, without id or media.
	msg domain.SentMessage
}

// plan validates and prices req as p's send, reading only: the request's
// shape and attachments (400), the line (403), the recipients (skipped
// ones listed, too many 400), an MMS its line's carrier cannot carry
// (422), the rates (422) and, with attachments, the
// hosted-media quota (409).
func (s *Service) plan(ctx context.Context, p auth.Principal, req domain.SendRequest) (sendPlan, error) {
	att, err := validate(req)
	if err != nil {
		return sendPlan{}, err
	}
	line, err := s.sendingLine(ctx, p, req.From)
	if err != nil {
		return sendPlan{}, err
	}
	res := &domain.SendResult{From: line.Number, Messages: []domain.SentMessage{}, Skipped: []domain.Skipped{},
		Billing: domain.Billing{Billed: true, Currency: "USD", Type: domain.BillingSMS}}

	to, err := s.recipients(ctx, line, req.To, res)
	if err != nil {
		return sendPlan{}, err
	}
	mms := len(to) > 1 || len(att) > 0
	if mms {
		res.Billing.Type = domain.BillingMMS
		if c, ok := s.carrier.(carrier.MMSChecker); ok {
			if err := c.CarriesMMS(ctx, line.Number); err != nil {
				return sendPlan{}, domain.Unprocessablef("%v; nothing was sent", err)
			}
		}
	}
	res.Billing.SkippedCount = len(res.Skipped)
	pl := sendPlan{att: att, line: line, to: to, res: res}
	if len(to) == 0 {
		return pl, nil
	}
	if pl.msg, _, err = s.price(ctx, p.AccountID, to, req.Message, mms); err != nil {
		return sendPlan{}, err
	}
	if len(att) > 0 {
		// Refused before the files are written when they clearly do not
		// fit; the intent's transaction decides exactly. A send without
		// attachments asks nothing.
		if err := s.store.CheckMediaQuota(ctx, p.AccountID, attachmentBytes(att), attachmentsWhat(len(att))); err != nil {
			return sendPlan{}, err
		}
	}
	res.Billing.Units, res.Billing.TotalPrice, res.Billing.RecipientCount = pl.msg.Units, pl.msg.Price, len(to)
	return pl, nil
}

// Quote answers what Send would for req, sending, charging and writing
// nothing: the same validation and errors, the same billing and skipped
// list, and the message it would send with how its text is encoded. The
// state it reads (opt-outs, rates, the media quota) can change before a
// send, which then answers by the state it finds.
func (s *Service) Quote(ctx context.Context, p auth.Principal, req domain.SendRequest) (*domain.Quote, error) {
	pl, err := s.plan(ctx, p, req)
	if err != nil {
		return nil, err
	}
	q := &domain.Quote{From: pl.res.From, Billing: pl.res.Billing, Messages: []domain.QuotedMessage{}, Skipped: pl.res.Skipped}
	if len(pl.to) > 0 {
		c := segment.Of(req.Message)
		q.Messages = append(q.Messages, domain.QuotedMessage{To: pl.to, Type: pl.msg.Type,
			Encoding: string(c.Encoding), Length: c.Units, UCS2Characters: segment.UCS2Characters(req.Message),
			Units: pl.msg.Units, UnitPrice: pl.msg.UnitPrice, Price: pl.msg.Price})
	}
	return q, nil
}

// carrierOutcome is what became of an intent handed to the carrier.
type carrierOutcome int

const (
	// carrierAccepted: the carrier took it; it is charged (or the charge is
	// being retried until the database takes it).
	carrierAccepted carrierOutcome = iota
	// carrierUnknown: no answer and no evidence by the deadline; the message
	// stays pending for a receipt or the reconciler.
	carrierUnknown
	// carrierRefused: the carrier did not take it (carrier.ErrUnavailable);
	// the message is still pending and nothing is charged: the caller
	// records what that means for it.
	carrierRefused
)

// deliver hands intent out (message id, written by CreateOutbound or
// BeginScheduledSend) to the carrier and records its acceptance: the part of
// the money guarantee after the intent, shared by direct and scheduled sends.
// An error is a fault hook's (tests).
func (s *Service) deliver(ctx context.Context, out *store.Outbound, id int64, m carrier.Message) (carrierOutcome, error) {
	sent, err := smsevent.Sent(id, out.From, out.To)
	if err != nil {
		return 0, err
	}
	// Before the carrier is called: its receipt can come before its answer.
	s.parties.remember(id, out.From, out.To)
	deadline := time.Now().Add(s.carrierTimeout)
	cctx, cancel := context.WithDeadline(ctx, deadline)
	acc, sendErr := s.carrier.Send(cctx, m)
	cancel()
	if errors.Is(sendErr, carrier.ErrQueued) {
		// The connection keeps it, to send in its turn, and records the
		// outcome itself (Accepted, Refused): wait for it until the
		// deadline, then answer pending.
		switch s.awaitSettled(ctx, out.AccountID, id, deadline) {
		case domain.StatusSent:
			return carrierAccepted, nil
		case domain.StatusFailed:
			return carrierRefused, nil
		}
		return carrierUnknown, nil
	}
	if sendErr != nil && !errors.Is(sendErr, carrier.ErrUnavailable) {
		// The carrier may have the message (a timeout, a connection lost
		// after the request was written): a 5xx would promise it was not
		// sent. Wait for evidence until the deadline.
		s.log.Warn("carrier outcome unknown; waiting for evidence", "message_id", id, "err", sendErr)
		if s.awaitEvidence(ctx, out.AccountID, id, deadline) {
			s.log.Info("a delivery receipt proved the carrier took the message", "message_id", id)
			return carrierAccepted, nil
		}
		return carrierUnknown, nil
	}
	if sendErr != nil {
		s.log.Warn("carrier refused message", "message_id", id, "err", sendErr)
		return carrierRefused, nil
	}
	if err := s.fault("after-carrier"); err != nil {
		return 0, err
	}
	if err := s.store.MarkOutboundSent(ctx, out, acc.Ref, sent); err != nil {
		// The carrier has the message but the database refused the charge:
		// answering 5xx would break "5xx means nothing sent", so the client
		// gets 201 and the charge is retried until the database takes it
		// (a receipt may record it first; either way it is charged once).
		s.log.Error("record carrier acceptance failed; retrying until the database answers", "message_id", id, "err", err)
		s.settle.start("sent:"+strconv.FormatInt(id, 10), id, func(ctx context.Context) error {
			return s.store.MarkOutboundSent(ctx, out, acc.Ref, sent)
		}, func(err error) {
			s.log.Error("charge of a message the carrier accepted is not recorded: the process stopped while the database refused it; a delivery receipt will still charge it",
				"message_id", id, "carrier_ref", acc.Ref, "err", err)
		})
	}
	return carrierAccepted, nil
}

func (s *Service) fault(step string) error {
	if s.faultHook == nil {
		return nil
	}
	return s.faultHook(step)
}

// upload is a decoded, validated attachment.
type upload struct {
	data        []byte
	contentType string
	ext         string
}

// validate checks the request's shape and decodes attachments.
func validate(req domain.SendRequest) ([]upload, error) {
	if req.From == "" {
		return nil, domain.Errorf(domain.Invalid, "from is required")
	}
	if len(req.To) == 0 {
		return nil, domain.Errorf(domain.Invalid, "to is required: 1 to %d recipients", MaxRecipients)
	}
	if len(req.To) > MaxToEntries {
		return nil, domain.Errorf(domain.Invalid, "to has %d entries; at most %d distinct recipients are allowed", len(req.To), MaxRecipients)
	}
	if len(req.Message) > MaxMessageBytes {
		return nil, domain.Errorf(domain.Invalid, "message is %d bytes; at most %d are allowed", len(req.Message), MaxMessageBytes)
	}
	// The HTTP API refuses invalid UTF-8 before decoding; this guards the
	// service's other callers, since U+FFFD would change the price.
	if !utf8.ValidString(req.Message) {
		return nil, domain.Errorf(domain.Invalid, "message is not valid UTF-8")
	}
	if len(req.Attachments) == 0 && strings.TrimSpace(req.Message) == "" {
		if req.Message == "" {
			return nil, domain.Errorf(domain.Invalid, "message is required unless attachments are sent")
		}
		return nil, domain.Errorf(domain.Invalid, "message is only whitespace")
	}
	if len(req.Attachments) > MaxAttachments {
		return nil, domain.Errorf(domain.Invalid, "attachments has %d items; at most %d are allowed", len(req.Attachments), MaxAttachments)
	}
	out := make([]upload, len(req.Attachments))
	for i, a := range req.Attachments {
		u, err := decodeAttachment(fmt.Sprintf("attachments[%d].", i), a)
		if err != nil {
			return nil, err
		}
		out[i] = u
	}
	return out, nil
}

// decodeAttachment checks one uploaded file (of a send, or hosted on its
// own) and decodes it; prefix ("attachments[2]." or "") names its fields in errors.
func decodeAttachment(prefix string, a domain.Attachment) (upload, error) {
	if a.Filename == "" {
		return upload{}, domain.Errorf(domain.Invalid, "%sfilename is required", prefix)
	}
	if extension(a.Filename) == "" {
		return upload{}, domain.Errorf(domain.Invalid, "%sfilename must have an extension, such as photo.jpg", prefix)
	}
	if a.ContentType == "" {
		return upload{}, domain.Errorf(domain.Invalid, "%scontentType is required", prefix)
	}
	typ, ok := imageTypes[a.ContentType]
	if !ok {
		return upload{}, domain.Errorf(domain.Invalid, "%scontentType %q is not allowed; use image/jpeg, image/png, image/bmp or image/gif", prefix, a.ContentType)
	}
	if a.Content == "" {
		return upload{}, domain.Errorf(domain.Invalid, "%scontent is required", prefix)
	}
	if base64.StdEncoding.DecodedLen(len(a.Content)) > MaxAttachmentLen+3 {
		return upload{}, domain.Errorf(domain.Invalid, "%scontent is larger than %d bytes decoded", prefix, MaxAttachmentLen)
	}
	// The decoder skips line breaks, which standard (RFC 4648) base64
	// does not have: MIME's wrapped form is refused, not guessed at.
	data, err := base64.StdEncoding.Strict().DecodeString(a.Content)
	if err != nil || strings.ContainsAny(a.Content, "\r\n") {
		return upload{}, domain.Errorf(domain.Invalid, "%scontent is not standard base64", prefix)
	}
	if len(data) > MaxAttachmentLen {
		return upload{}, domain.Errorf(domain.Invalid, "%scontent is %d bytes decoded; at most %d are allowed", prefix, len(data), MaxAttachmentLen)
	}
	if len(data) == 0 {
		return upload{}, domain.Errorf(domain.Invalid, "%scontent is empty", prefix)
	}
	if !typ.hasSignature(data) {
		return upload{}, domain.Errorf(domain.Invalid, "%scontent (%s) is not %s: it does not start with that format's signature; declare the file's real type", prefix, shortName(a.Filename), a.ContentType)
	}
	return upload{data: data, contentType: a.ContentType, ext: typ.ext}, nil
}

// shortName quotes a client's filename for an error message, cut short.
func shortName(name string) string {
	if r := []rune(name); len(r) > 64 {
		name = string(r[:64]) + "…"
	}
	return fmt.Sprintf("%q", name)
}

// extension returns the lowercased extension of a plain file name ("" when
// it has none or the name is not a plain file name).
func extension(name string) string {
	if strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return ""
	}
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
	if ext == "" || len(ext) > 10 {
		return ""
	}
	for _, c := range ext {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return ext
}

// sendingLine resolves from to one of the account's SMS lines the principal
// may send from; anything else is 403, never a guess.
func (s *Service) sendingLine(ctx context.Context, p auth.Principal, from string) (domain.Line, error) {
	number, ok := phone.Digits(from)
	if !ok {
		return domain.Line{}, domain.Errorf(domain.PermissionDenied, "from %q is not one of your SMS lines (see GET /sms/lines)", from)
	}
	lines, err := s.Lines(ctx, p)
	if err != nil {
		return domain.Line{}, err
	}
	for _, l := range lines {
		if l.Number == number {
			return l, nil
		}
	}
	return domain.Line{}, domain.Errorf(domain.PermissionDenied, "from %s is not one of your SMS lines (see GET /sms/lines)", number)
}

// recipients normalizes and de-duplicates to and returns the numbers to dial
// in the order given, recording each dropped entry in res.Skipped, also in
// the order given.
func (s *Service) recipients(ctx context.Context, line domain.Line, raw []string, res *domain.SendResult) ([]string, error) {
	normalized := make([]string, len(raw)) // "" for an entry that is not dialable
	var distinct []string
	seen := map[string]bool{}
	for i, r := range raw {
		n, ok := phone.Normalize(r)
		if !ok || !phone.Dialable(n) {
			continue
		}
		normalized[i] = n
		if !seen[n] {
			seen[n] = true
			distinct = append(distinct, n)
		}
	}
	if len(distinct) > MaxRecipients {
		return nil, domain.Errorf(domain.Invalid, "to has %d distinct recipients; at most %d are allowed", len(distinct), MaxRecipients)
	}
	opted, err := s.store.OptedOut(ctx, line.ID, distinct)
	if err != nil {
		return nil, err
	}
	var out []string
	clear(seen)
	for i, n := range normalized {
		reason := ""
		switch {
		case n == "":
			reason = domain.SkipInvalid
		case seen[n]:
			reason = domain.SkipDuplicate
		case opted[n]:
			reason = domain.SkipOptedOut
		}
		if n != "" {
			seen[n] = true
		}
		if reason != "" {
			res.Skipped = append(res.Skipped, domain.Skipped{To: raw[i], Reason: reason})
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

// price applies the account's rate card to a message to recipients to and
// returns it with each recipient's unit price (a schedule keeps them: see
// priceAt).
func (s *Service) price(ctx context.Context, accountID int64, to []string, text string, mms bool) (domain.SentMessage, []money.Micros, error) {
	rates, err := s.store.Rates(ctx, accountID)
	if err != nil {
		return domain.SentMessage{}, nil, err
	}
	unit := make([]money.Micros, len(to))
	for i, n := range to {
		r, ok := RateFor(rates, n)
		if !ok {
			return domain.SentMessage{}, nil, domain.Unprocessablef("no active rate applies to destination %s; nothing was sent", n)
		}
		unit[i] = r.SMS
		if mms {
			unit[i] = r.MMS
		}
	}
	msg, err := priceAt(to, text, mms, unit)
	return msg, unit, err
}

// priceAt prices a message to recipients to at their unit prices (unit,
// parallel to to): sms is per segment at the destination's rate; mms is
// once, at the highest mms rate among the recipients, whatever their number.
func priceAt(to []string, text string, mms bool, unit []money.Micros) (domain.SentMessage, error) {
	msg := domain.SentMessage{To: to, Type: domain.BillingSMS, Status: domain.StatusSent, Units: 1}
	if mms {
		msg.Type = domain.BillingMMS
	} else {
		msg.Units = segment.Of(text).Segments
	}
	for _, u := range unit {
		msg.UnitPrice = max(msg.UnitPrice, u)
	}
	var err error
	msg.Price, err = msg.UnitPrice.Mul(msg.Units)
	if err != nil {
		return domain.SentMessage{}, fmt.Errorf("sms: price: %w", err)
	}
	return msg, nil
}

// RateFor returns the rate with the longest prefix matching number.
func RateFor(rates []domain.Rate, number string) (domain.Rate, bool) {
	var best domain.Rate
	found := false
	for _, r := range rates {
		if strings.HasPrefix(number, r.Prefix) && (!found || len(r.Prefix) > len(best.Prefix)) {
			best, found = r, true
		}
	}
	return best, found
}

// upload stores the attachments, in order, and returns their names.
func (s *Service) upload(ctx context.Context, att []upload) ([]string, error) {
	var names []string
	for _, a := range att {
		if s.media == nil {
			return nil, errNoMedia
		}
		name, err := s.media.Put(ctx, a.data, a.contentType, a.ext)
		if err != nil {
			s.discard(names)
			return nil, fmt.Errorf("sms: store attachment: %w", err)
		}
		names = append(names, name)
	}
	return names, nil
}

// attachmentBytes is the decoded size of a send's attachments.
func attachmentBytes(att []upload) int64 {
	var n int64
	for _, a := range att {
		n += int64(len(a.data))
	}
	return n
}

// attachmentsWhat names a send's attachments in the quota's 409; it must
// read as the store's does for the same send.
func attachmentsWhat(n int) string {
	if n == 1 {
		return "this attachment"
	}
	return "these attachments"
}

// dropFailedMedia removes the files of message id, which the carrier
// refused: rows and usage first, then the blobs. A failure leaves them to
// count against the quota until the message is deleted; it is logged.
func (s *Service) dropFailedMedia(ctx context.Context, id int64) {
	names, err := s.store.DropFailedMedia(ctx, id)
	if err != nil {
		s.log.Error("remove the attachments of a refused message", "message_id", id, "err", err)
		return
	}
	s.discard(names)
}

// discard deletes blobs that no row records (any more).
func (s *Service) discard(names []string) {
	for _, n := range names {
		if err := s.media.Delete(context.Background(), n); err != nil {
			s.log.Warn("delete unused attachment", "err", err)
		}
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

var errNoMedia = errors.New("sms: no media store configured")

// evidencePoll is how often a send waiting on an unknown outcome reads its
// message: the receipt may reach another node (or this one's retry).
const evidencePoll = 500 * time.Millisecond

// awaitEvidence waits until deadline for proof that the carrier took message
// id (a receipt, which marks it sent and charges it) and reports whether it
// came.
func (s *Service) awaitEvidence(ctx context.Context, accountID, id int64, deadline time.Time) bool {
	return s.awaitSettled(ctx, accountID, id, deadline) == domain.StatusSent
}

// awaitSettled waits until deadline for message id to be settled, sent (a
// receipt, or a queued message's acceptance) or failed (a queued message's
// refusal), and returns that status, or "" when neither came. What this
// process records wakes it at once; what another node records is seen by
// reading the message.
func (s *Service) awaitSettled(ctx context.Context, accountID, id int64, deadline time.Time) string {
	ch := make(chan struct{})
	s.evidence.Store(id, ch)
	defer s.evidence.Delete(id)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	tick := time.NewTicker(evidencePoll)
	defer tick.Stop()
	settled := func() string {
		m, err := s.store.Message(ctx, accountID, id)
		if err != nil || (m.Status != domain.StatusSent && m.Status != domain.StatusFailed) {
			return ""
		}
		return m.Status
	}
	for {
		if st := settled(); st != "" {
			return st
		}
		select {
		case <-ch:
			return settled()
		case <-tick.C:
		case <-timer.C:
			return settled()
		}
	}
}

// evidenceArrived wakes a send waiting on message id's unknown outcome.
func (s *Service) evidenceArrived(id int64) {
	if ch, ok := s.evidence.LoadAndDelete(id); ok {
		close(ch.(chan struct{}))
	}
}
