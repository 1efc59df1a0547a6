package webhooks

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"time"
	"unicode/utf8"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Limits on the text fields of a subscription.
const (
	maxNameLength        = 200
	maxDescriptionLength = 2000
)

// SecretPrefix starts every signing secret (the Standard Webhooks form).
const SecretPrefix = "whsec_"

// secretBytes is how much randomness a secret carries.
const secretBytes = 32

// DefaultRotationOverlap is how long the old secret keeps signing after a rotation.
const DefaultRotationOverlap = 24 * time.Hour

// Config is what the service needs; zero (or negative) fields take the
// defaults.
type Config struct {
	Store *store.Store
	// AllowHosts may be plain http and private addresses.
	AllowHosts AllowList
	// RotationOverlap defaults to DefaultRotationOverlap.
	RotationOverlap time.Duration
	Log             *slog.Logger
	// Retention is how long webhook history is kept (DefaultRetention): the
	// pruner deletes what is older, and a recover window starts within it.
	Retention time.Duration
}

// Service manages subscriptions; its background work is the Dispatcher
// (dispatcher.go) and the Pruner (prune.go).
type Service struct {
	store   *store.Store
	allow   AllowList
	overlap time.Duration
	log     *slog.Logger
	// sender sends test events: the last Dispatcher built, or one never
	// started, used only for that.
	sender *Dispatcher
	// retention bounds a recover window and the history the pruner keeps.
	retention time.Duration
}

// New builds the service, applying defaults.
func New(cfg Config) *Service {
	s := &Service{
		store:     cfg.Store,
		allow:     cfg.AllowHosts,
		overlap:   cmp.Or(max(cfg.RotationOverlap, 0), DefaultRotationOverlap),
		log:       cmp.Or(cfg.Log, slog.New(slog.DiscardHandler)),
		retention: cmp.Or(max(cfg.Retention, 0), DefaultRetention),
	}
	if s.allow == nil {
		s.allow = AllowList{}
	}
	s.sender = s.newDispatcher(DispatcherConfig{})
	return s
}

// CanManage applies the role permission behind every /webhooks operation
// (docs/decisions.md, "Webhooks need a role permission"): a subscription is
// a standing read of every event of the account, whatever lines, users and
// calls the person's role hides, so an OAuth token's person needs the
// Webhooks permission to see or change one. An API key is the account.
func CanManage(p auth.Principal) error {
	if p.IsUser() && !p.Permissions.Webhooks {
		return domain.Errorf(domain.PermissionDenied, "your role does not include webhooks")
	}
	return nil
}

// ListParams filter GET /webhooks.
type ListParams struct {
	Type        string // "" for every type
	EnabledOnly bool
}

// List returns the account's subscriptions.
func (s *Service) List(ctx context.Context, p auth.Principal, lp ListParams) ([]domain.Webhook, error) {
	if lp.Type != "" && !domain.IsWebhookType(lp.Type) {
		return nil, unknownType("type", lp.Type)
	}
	return s.store.Webhooks(ctx, p.AccountID, lp.Type, lp.EnabledOnly)
}

// Get returns one subscription.
func (s *Service) Get(ctx context.Context, p auth.Principal, id int64) (domain.Webhook, error) {
	return s.store.Webhook(ctx, p.AccountID, id)
}

// CreateParams is POST /webhooks.
type CreateParams struct {
	Name, Description, URL, Type string
	Enabled                      bool
}

// Create saves a subscription with a new secret; the result carries it.
func (s *Service) Create(ctx context.Context, p auth.Principal, cp CreateParams) (domain.Webhook, error) {
	if cp.URL == "" {
		return domain.Webhook{}, domain.Errorf(domain.Invalid, "url is required")
	}
	if cp.Type == "" {
		return domain.Webhook{}, domain.Errorf(domain.Invalid, "type is required")
	}
	if err := s.check(&cp.Name, &cp.Description, &cp.URL, &cp.Type); err != nil {
		return domain.Webhook{}, err
	}
	w := domain.Webhook{AccountID: p.AccountID, Name: cp.Name, Description: cp.Description, URL: cp.URL, Type: cp.Type, Enabled: cp.Enabled, Secret: NewSecret()}
	if err := s.store.CreateWebhook(ctx, &w); err != nil {
		return domain.Webhook{}, err
	}
	return w, nil
}

// Update applies a merge update (PUT and PATCH alike).
func (s *Service) Update(ctx context.Context, p auth.Principal, id int64, patch domain.WebhookPatch) (domain.Webhook, error) {
	if patch.URL != nil && *patch.URL == "" {
		return domain.Webhook{}, domain.Errorf(domain.Invalid, "url must not be empty")
	}
	if patch.Type != nil && *patch.Type == "" {
		return domain.Webhook{}, unknownType("type", "")
	}
	if err := s.check(patch.Name, patch.Description, patch.URL, patch.Type); err != nil {
		return domain.Webhook{}, err
	}
	return s.store.UpdateWebhook(ctx, p.AccountID, id, patch)
}

// SetEnabled enables or disables a subscription; doing it twice is no error.
func (s *Service) SetEnabled(ctx context.Context, p auth.Principal, id int64, enabled bool) (domain.Webhook, error) {
	return s.store.UpdateWebhook(ctx, p.AccountID, id, domain.WebhookPatch{Enabled: &enabled})
}

// Delete removes a subscription; its pending deliveries go with it.
func (s *Service) Delete(ctx context.Context, p auth.Principal, id int64) error {
	return s.store.DeleteWebhook(ctx, p.AccountID, id)
}

// Secret returns the subscription with its current signing secret and the
// previous ones that still sign (Previous).
func (s *Service) Secret(ctx context.Context, p auth.Principal, id int64) (domain.Webhook, error) {
	return s.store.WebhookSecrets(ctx, p.AccountID, id)
}

// RotateSecret replaces the signing secret. The old one keeps signing beside
// the new for the overlap, so a receiver can switch without losing events;
// so does every secret replaced before it, each for the overlap after it was
// replaced. At most store.MaxPreviousSecrets sign beside the current one: a
// rotation beyond is 409 until the oldest expires.
func (s *Service) RotateSecret(ctx context.Context, p auth.Principal, id int64) (domain.Webhook, error) {
	return s.store.RotateWebhookSecret(ctx, p.AccountID, id, NewSecret(), s.overlap)
}

// check validates the fields that are set.
func (s *Service) check(name, description, url, typ *string) error {
	if name != nil {
		if err := checkText("name", *name, maxNameLength); err != nil {
			return err
		}
	}
	if description != nil {
		if err := checkText("description", *description, maxDescriptionLength); err != nil {
			return err
		}
	}
	if typ != nil && !domain.IsWebhookType(*typ) {
		return unknownType("type", *typ)
	}
	if url != nil {
		stored, err := checkURL(*url, s.allow)
		if err != nil {
			return err
		}
		*url = stored // the host in ASCII form (checkURL)
	}
	return nil
}

func checkText(field, v string, max int) error {
	if n := utf8.RuneCountInString(v); n > max {
		return domain.Errorf(domain.Invalid, "%s is %d characters, more than the %d allowed", field, n, max)
	}
	return nil
}

func unknownType(field, v string) error {
	return domain.Errorf(domain.Invalid, "%s %q is not a webhook type; GET /webhooks/types lists them", field, v)
}

// NewSecret returns a fresh signing secret: whsec_ and base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, secretBytes)
	rand.Read(b)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// Deliveries lists a subscription's deliveries, newest first: at most limit,
// with ids below before (0 for the newest).
func (s *Service) Deliveries(ctx context.Context, p auth.Principal, id, before int64, limit int) ([]domain.WebhookDelivery, error) {
	if _, err := s.store.Webhook(ctx, p.AccountID, id); err != nil {
		return nil, err
	}
	return s.store.WebhookDeliveries(ctx, p.AccountID, id, before, limit)
}

// Redeliver queues a delivery's event to its subscription again, now, with
// the same webhook-id, and returns the new delivery.
func (s *Service) Redeliver(ctx context.Context, p auth.Principal, id, deliveryID int64) (domain.WebhookDelivery, error) {
	newID, err := s.store.Redeliver(ctx, p.AccountID, id, deliveryID)
	if err != nil {
		return domain.WebhookDelivery{}, err
	}
	return s.store.WebhookDelivery(ctx, p.AccountID, id, newID)
}
