package sms

import (
	"context"
	"strings"
	"unicode/utf8"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// Limits of saved replies and drafts.
const (
	MaxTemplateTitle = 200 // characters
	MaxDraftKey      = 128 // characters, from the spec
)

// Saved replies and drafts belong to the person calling; an API key, which
// has no person, owns the account's integration replies and drafts (user 0).
// Another owner's template or draft is not_found.

// Templates lists the caller's saved replies, oldest first.
func (s *Service) Templates(ctx context.Context, p auth.Principal) ([]domain.Template, error) {
	return s.store.Templates(ctx, p.AccountID, p.UserID)
}

// CreateTemplate saves a reply for the caller.
func (s *Service) CreateTemplate(ctx context.Context, p auth.Principal, title, body string) (domain.Template, error) {
	t := domain.Template{AccountID: p.AccountID, UserID: p.UserID, Title: title, Body: body}
	if err := validTemplate(t); err != nil {
		return domain.Template{}, err
	}
	err := s.store.CreateTemplate(ctx, &t)
	return t, err
}

// ReplaceTemplate replaces the title and body of the caller's template id.
func (s *Service) ReplaceTemplate(ctx context.Context, p auth.Principal, id int64, title, body string) (domain.Template, error) {
	t := domain.Template{ID: id, AccountID: p.AccountID, UserID: p.UserID, Title: title, Body: body}
	if err := validTemplate(t); err != nil {
		return domain.Template{}, err
	}
	err := s.store.ReplaceTemplate(ctx, &t)
	return t, err
}

// DeleteTemplate deletes the caller's template id.
func (s *Service) DeleteTemplate(ctx context.Context, p auth.Principal, id int64) error {
	return s.store.DeleteTemplate(ctx, p.AccountID, p.UserID, id)
}

func validTemplate(t domain.Template) error {
	switch {
	case strings.TrimSpace(t.Title) == "":
		return domain.Errorf(domain.Invalid, "title is required and must not be blank")
	case utf8.RuneCountInString(t.Title) > MaxTemplateTitle:
		return domain.Errorf(domain.Invalid, "title is %d characters; at most %d are allowed", utf8.RuneCountInString(t.Title), MaxTemplateTitle)
	case strings.TrimSpace(t.Body) == "":
		return domain.Errorf(domain.Invalid, "body is required and must not be blank")
	case len(t.Body) > MaxMessageBytes:
		return domain.Errorf(domain.Invalid, "body is %d bytes; at most %d are allowed (a message's limit)", len(t.Body), MaxMessageBytes)
	}
	return nil
}

// Draft returns the caller's draft under key.
func (s *Service) Draft(ctx context.Context, p auth.Principal, key string) (domain.Draft, error) {
	if err := validDraftKey(key); err != nil {
		return domain.Draft{}, err
	}
	return s.store.Draft(ctx, p.AccountID, p.UserID, key)
}

// PutDraft creates or replaces the caller's draft under key. An empty
// message is a legal draft.
func (s *Service) PutDraft(ctx context.Context, p auth.Principal, key, message string) (domain.Draft, error) {
	if err := validDraftKey(key); err != nil {
		return domain.Draft{}, err
	}
	if len(message) > MaxMessageBytes {
		return domain.Draft{}, domain.Errorf(domain.Invalid, "message is %d bytes; at most %d are allowed (a message's limit)", len(message), MaxMessageBytes)
	}
	d := domain.Draft{AccountID: p.AccountID, UserID: p.UserID, Key: key, Message: message}
	err := s.store.PutDraft(ctx, &d)
	return d, err
}

// DeleteDraft discards the caller's draft under key.
func (s *Service) DeleteDraft(ctx context.Context, p auth.Principal, key string) error {
	if err := validDraftKey(key); err != nil {
		return err
	}
	return s.store.DeleteDraft(ctx, p.AccountID, p.UserID, key)
}

func validDraftKey(key string) error {
	n := utf8.RuneCountInString(key)
	if n == 0 || n > MaxDraftKey || !utf8.ValidString(key) {
		return domain.Errorf(domain.Invalid, "draftId must be 1 to %d characters", MaxDraftKey)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return domain.Errorf(domain.Invalid, "draftId must not contain control characters")
		}
	}
	return nil
}
