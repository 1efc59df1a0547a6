// Package calls is the call history: ingest from the phone system (JSON
// records, Asterisk CDRs), search, call detail with legs, recordings served
// through signed links, and transcripts.
package calls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/blob"
	"switchboard/internal/contacts"
	"switchboard/internal/domain"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// Config is what the service needs.
type Config struct {
	Store *store.Store
	// Blobs holds recordings. Without it, recordings are not stored.
	Blobs *blob.Store
	// PublicURL is the base URL clients reach this server at; signed
	// recording links start with it.
	PublicURL string
	Log       *slog.Logger
}

// Service answers the calls endpoints and ingests calls.
type Service struct {
	st        *store.Store
	blobs     *blob.Store
	publicURL string
	log       *slog.Logger
}

// New builds the service, applying defaults.
func New(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{st: cfg.Store, blobs: cfg.Blobs, publicURL: strings.TrimRight(cfg.PublicURL, "/"), log: cfg.Log}
}

// canReport applies the role permission behind call search and detail.
func canReport(p auth.Principal) error {
	if p.IsUser() && !p.Permissions.CallReports {
		return domain.Errorf(domain.PermissionDenied, "your role does not include call reports")
	}
	return nil
}

// canHear applies the role permission and the account setting behind
// recordings and transcripts.
func (s *Service) canHear(ctx context.Context, p auth.Principal) error {
	if p.IsUser() && !(p.Permissions.CallReports && p.Permissions.AllowRecordings) {
		return domain.Errorf(domain.PermissionDenied, "your role does not allow call recordings (call reports with allow recordings)")
	}
	return s.sensitiveOff(ctx, p.AccountID)
}

// errSensitive is how every recording and transcript request is refused
// while the account has sensitive-content re-verification on.
var errSensitive = domain.Errorf(domain.PermissionDenied,
	"recordings and transcripts are unavailable over the API while the account's sensitive-content re-verification setting is on")

func (s *Service) sensitiveOff(ctx context.Context, accountID int64) error {
	acct, err := s.st.Account(ctx, accountID)
	if err != nil {
		return err
	}
	if acct.SensitiveReverify {
		return errSensitive
	}
	return nil
}

// Search runs POST /calls/search.
func (s *Service) Search(ctx context.Context, p auth.Principal, params SearchParams) (SearchResult, error) {
	if err := canReport(p); err != nil {
		return SearchResult{}, err
	}
	q, limit, err := params.query(p.AccountID)
	if err != nil {
		return SearchResult{}, err
	}
	total, list, err := s.st.SearchCalls(ctx, q)
	if err != nil {
		return SearchResult{}, err
	}
	if err := s.names(ctx, p, list); err != nil {
		return SearchResult{}, err
	}
	return SearchResult{Total: total, Limit: limit, Offset: q.Offset, Calls: list}, nil
}

// CallDetail is a call with its legs.
type CallDetail struct {
	Call domain.Call
	Legs []domain.CallLeg
}

// checkID is the 400 for a path id that is not a call id at all.
func checkID(id string) error {
	a, b, ok := strings.Cut(id, ".")
	if !ok || !digits(a) || !digits(b) || len(a) > 18 || len(b) > 18 {
		return domain.Errorf(domain.Invalid, "callid %q is malformed: want %s", id, domain.CallIDShape)
	}
	return nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (s *Service) call(ctx context.Context, p auth.Principal, id string) (store.StoredCall, error) {
	if err := checkID(id); err != nil {
		return store.StoredCall{}, err
	}
	c, err := s.st.Call(ctx, p.AccountID, id)
	if domain.IsNotFound(err) {
		return c, domain.Errorf(domain.NotFound, "call %s not found", id)
	}
	return c, err
}

// Call runs GET /calls/{callid}.
func (s *Service) Call(ctx context.Context, p auth.Principal, id string) (CallDetail, error) {
	if err := canReport(p); err != nil {
		return CallDetail{}, err
	}
	c, err := s.call(ctx, p, id)
	if err != nil {
		return CallDetail{}, err
	}
	legs, err := s.st.CallLegs(ctx, c)
	if err != nil {
		return CallDetail{}, err
	}
	one := []domain.Call{c.Call}
	if err := s.names(ctx, p, one); err != nil {
		return CallDetail{}, err
	}
	return CallDetail{Call: one[0], Legs: legs}, nil
}

// otherParty is the number of the call's other party as the address book
// keeps numbers: the caller of an inbound call, the called number of an
// outbound one; "" for an internal call or a number that is no phone
// number (an extension).
func otherParty(c domain.Call) string {
	n := c.CalledNumber
	switch c.Direction {
	case domain.CallInbound:
		n = c.CallerNumber
	case domain.CallOutbound:
	default:
		return ""
	}
	d, ok := phone.Normalize(n)
	if !ok {
		return ""
	}
	return d
}

// names fills each call's Contact, where p may read contacts: one read for
// the whole page.
func (s *Service) names(ctx context.Context, p auth.Principal, list []domain.Call) error {
	if !contacts.MayRead(p) {
		return nil
	}
	var numbers []string
	seen := map[string]bool{}
	for _, c := range list {
		if n := otherParty(c); n != "" && !seen[n] {
			seen[n] = true
			numbers = append(numbers, n)
		}
	}
	held, err := contacts.Names(ctx, s.st, p, numbers)
	if err != nil {
		return err
	}
	for i := range list {
		if ref, ok := held[otherParty(list[i])]; ok {
			list[i].Contact = &ref
		}
	}
	return nil
}

// Transcripts runs GET /calls/{callid}/transcripts.
func (s *Service) Transcripts(ctx context.Context, p auth.Principal, id string) ([]domain.Transcript, error) {
	if err := s.canHear(ctx, p); err != nil {
		return nil, err
	}
	c, err := s.call(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return s.st.CallTranscripts(ctx, c)
}

// RecordedLeg is a leg with audio, and the signed link that plays it.
type RecordedLeg struct {
	Leg domain.CallLeg
	URL string
}

// Recordings runs GET /calls/{callid}/recordings: every recorded leg.
func (s *Service) Recordings(ctx context.Context, p auth.Principal, id string) ([]RecordedLeg, error) {
	if err := s.canHear(ctx, p); err != nil {
		return nil, err
	}
	c, err := s.call(ctx, p, id)
	if err != nil {
		return nil, err
	}
	legs, err := s.st.CallLegs(ctx, c)
	if err != nil {
		return nil, err
	}
	key, err := s.st.RecordingKey(ctx)
	if err != nil {
		return nil, err
	}
	out := []RecordedLeg{}
	for _, l := range legs {
		if l.Recording == nil {
			continue
		}
		out = append(out, RecordedLeg{Leg: l, URL: s.publicURL + linkPath(key, p.AccountID, c.ID, l.UniqueID, c.LinkGen)})
	}
	return out, nil
}

// Recording runs GET /calls/{callid}/recordings/{uniqueid}.
func (s *Service) Recording(ctx context.Context, p auth.Principal, id, uniqueID string) (RecordedLeg, error) {
	all, err := s.Recordings(ctx, p, id)
	if err != nil {
		return RecordedLeg{}, err
	}
	for _, r := range all {
		if r.Leg.UniqueID == uniqueID {
			return r, nil
		}
	}
	return RecordedLeg{}, domain.Errorf(domain.NotFound, "no recorded leg %q on call %s", uniqueID, id)
}

// Audio is a recording opened for a signed link.
type Audio struct {
	*blob.Object
	ContentType string
	ModTime     time.Time
}

// OpenLink checks a signed recording link (the path after /recordings/) and
// opens its audio. A link that is malformed, forged, revoked or signed with
// a rotated key is not_found; one to an account with sensitive-content
// re-verification on is permission_denied.
func (s *Service) OpenLink(ctx context.Context, path string) (*Audio, error) {
	l, ok := parseLink(path)
	if !ok {
		return nil, errNoLink
	}
	key, err := s.st.RecordingKey(ctx)
	if err != nil {
		return nil, err
	}
	if !l.valid(key) {
		return nil, errNoLink
	}
	c, err := s.st.Call(ctx, l.account, l.callID)
	if domain.IsNotFound(err) || (err == nil && c.LinkGen != l.gen) {
		return nil, errNoLink
	}
	if err != nil {
		return nil, err
	}
	if err := s.sensitiveOff(ctx, l.account); err != nil {
		return nil, err
	}
	legs, err := s.st.CallLegs(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, leg := range legs {
		if leg.UniqueID != l.uniqueID || leg.Recording == nil {
			continue
		}
		if s.blobs == nil {
			return nil, errNoLink
		}
		obj, err := s.blobs.Get(ctx, leg.Recording.Blob)
		if errors.Is(err, blob.ErrNotExist) {
			return nil, errNoLink
		}
		if err != nil {
			return nil, fmt.Errorf("calls: open recording: %w", err)
		}
		return &Audio{Object: obj, ContentType: leg.Recording.ContentType, ModTime: obj.ModTime}, nil
	}
	return nil, errNoLink
}

var errNoLink = domain.Errorf(domain.NotFound, "no such recording")

// RevokeLinks makes every signed link to one call's recordings stop working;
// links handed out afterwards work.
func (s *Service) RevokeLinks(ctx context.Context, accountID int64, id string) error {
	return s.st.RevokeRecordingLinks(ctx, accountID, id)
}

// RotateKey replaces the key that signs recording links: every link handed
// out so far stops working.
func (s *Service) RotateKey(ctx context.Context) error { return s.st.RotateRecordingKey(ctx) }
