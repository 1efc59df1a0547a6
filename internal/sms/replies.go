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
// Another owner's template or draft is not_found. A shared template (a team
// reply) is the account's: every credential of the account lists and uses
// it, and those who curate the team's replies make, change and delete it
// (ManageShared; docs/decisions.md, "Team saved replies").

// ManageShared reports whether p may make, change and delete the account's
// shared templates: an API key (the account's own credential, which no role
// binds), or a person whose role shows them every user (users:all), the
// role that leads the team.
func ManageShared(p auth.Principal) error {
	if !p.IsUser() || p.Permissions.Users == domain.UsersAll {
		return nil
	}
	return domain.Errorf(domain.PermissionDenied, "shared saved replies are the team's: making, changing or deleting one needs a role whose Users permission is all")
}

// Templates lists the caller's saved replies and the account's shared ones,
// oldest first.
func (s *Service) Templates(ctx context.Context, p auth.Principal) ([]domain.Template, error) {
	return s.store.Templates(ctx, p.AccountID, p.UserID)
}

// CreateTemplate saves a reply for the caller, or for the team when shared.
func (s *Service) CreateTemplate(ctx context.Context, p auth.Principal, title, body string, shared bool) (domain.Template, error) {
	t := domain.Template{AccountID: p.AccountID, UserID: p.UserID, Title: title, Body: body, Shared: shared}
	if err := validTemplate(t); err != nil {
		return domain.Template{}, err
	}
	if shared {
		if err := ManageShared(p); err != nil {
			return domain.Template{}, err
		}
	}
	err := s.store.CreateTemplate(ctx, &t)
	return t, err
}

// ReplaceTemplate replaces the title and body of template id: the caller's
// own, or a shared one. shared, when given, must be what the template is:
// whether a reply is the team's is decided when it is made.
func (s *Service) ReplaceTemplate(ctx context.Context, p auth.Principal, id int64, title, body string, shared *bool) (domain.Template, error) {
	t := domain.Template{ID: id, AccountID: p.AccountID, UserID: p.UserID, Title: title, Body: body}
	if err := validTemplate(t); err != nil {
		return domain.Template{}, err
	}
	cur, err := s.owned(ctx, p, id)
	if err != nil {
		return domain.Template{}, err
	}
	if shared != nil && *shared != cur.Shared {
		return domain.Template{}, domain.Errorf(domain.Invalid, "shared is %v for template %d and cannot change: whether a reply is the team's is set when it is made; save a new one instead", cur.Shared, id)
	}
	t.Shared = cur.Shared
	err = s.store.ReplaceTemplate(ctx, &t)
	return t, err
}

// DeleteTemplate deletes template id: the caller's own, or a shared one.
func (s *Service) DeleteTemplate(ctx context.Context, p auth.Principal, id int64) error {
	cur, err := s.owned(ctx, p, id)
	if err != nil {
		return err
	}
	return s.store.DeleteTemplate(ctx, p.AccountID, p.UserID, id, cur.Shared)
}

// owned is template id, which p may change: their own, or a shared one
// when p curates the team's (ManageShared: 403 otherwise, since p sees it).
func (s *Service) owned(ctx context.Context, p auth.Principal, id int64) (domain.Template, error) {
	t, err := s.store.Template(ctx, p.AccountID, p.UserID, id)
	if err != nil {
		return t, err
	}
	if t.Shared {
		return t, ManageShared(p)
	}
	return t, nil
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
