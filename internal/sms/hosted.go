package sms

import (
	"context"
	"fmt"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// HostMedia stores one attachment on its own, checked by the rules of a
// send's attachments, and returns it with its public URL: a scheduled
// message can then carry it. Uploading is free; a person needs the Phone
// numbers permission, as for sending. The file counts against the account's
// hosted-media quota (409 beyond it) and is removed if no message or
// schedule uses it within MediaUnusedFor.
func (s *Service) HostMedia(ctx context.Context, p auth.Principal, a domain.Attachment) (domain.HostedMedia, string, error) {
	if err := p.RequireNumbers(); err != nil {
		return domain.HostedMedia{}, "", err
	}
	u, err := decodeAttachment("", a)
	if err != nil {
		return domain.HostedMedia{}, "", err
	}
	// Refused before the file is written when it clearly does not fit; the
	// upload's own transaction decides exactly.
	if err := s.store.CheckMediaQuota(ctx, p.AccountID, int64(len(u.data)), "this upload"); err != nil {
		return domain.HostedMedia{}, "", err
	}
	names, err := s.upload(ctx, []upload{u})
	if err != nil {
		return domain.HostedMedia{}, "", err
	}
	m := domain.HostedMedia{Name: names[0], AccountID: p.AccountID, ContentType: u.contentType, Size: int64(len(u.data)), CreatedBy: p.UserID}
	if err := s.store.AddHostedMedia(ctx, &m); err != nil {
		s.discard(names)
		return domain.HostedMedia{}, "", fmt.Errorf("sms: host media: %w", err)
	}
	return m, s.mediaURL(m.Name), nil
}
