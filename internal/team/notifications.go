package team

import (
	"context"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// DefaultNotifications are a person's preferences until they save their
// own: every notification on, the ones a team inbox's people expect
// (docs/decisions.md, "The team: notification preferences").
var DefaultNotifications = domain.NotificationPrefs{AssignedToMe: true, UnassignedOnLines: true, Mentions: true}

// personal refuses an API key: it is no person, has no browser to notify
// and is mentioned by no one.
func personal(p auth.Principal) error {
	if !p.IsUser() {
		return domain.Errorf(domain.Invalid, "notification preferences are a person's and need a user credential (an OAuth token); an API key has none")
	}
	return nil
}

// Notifications returns p's preferences (the defaults until saved).
func (s *Service) Notifications(ctx context.Context, p auth.Principal) (domain.NotificationPrefs, error) {
	if err := personal(p); err != nil {
		return domain.NotificationPrefs{}, err
	}
	prefs, found, err := s.store.NotificationPrefs(ctx, p.AccountID, p.UserID)
	if err != nil || !found {
		return DefaultNotifications, err
	}
	return prefs, nil
}

// SetNotifications saves p's preferences.
func (s *Service) SetNotifications(ctx context.Context, p auth.Principal, prefs domain.NotificationPrefs) (domain.NotificationPrefs, error) {
	if err := personal(p); err != nil {
		return domain.NotificationPrefs{}, err
	}
	err := s.store.PutNotificationPrefs(ctx, p.AccountID, p.UserID, &prefs)
	return prefs, err
}
