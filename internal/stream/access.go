package stream

import (
	"context"

	"switchboard/internal/auth"
	"switchboard/internal/contacts"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Visibility follows the reads' gates (docs/decisions.md, "Live events"):
// an event is streamed only where the credential could read what it is
// about. SMS and conversation events need messages:read or sms:read and,
// for a person, a line their role grants (auth.Lines, the inbox's rule);
// call events need reports:read and, for a person, the Call reports
// permission; transcription events also recordings:read, allow-recordings
// and the account's sensitive-content setting off (the calls service's
// rule for transcripts); contact events the readers of contacts
// (messages:read and, for a person, a role with phone numbers: contacts.CanRead).

// ErrNoScope is FilterFor's error for a credential with none of the scopes
// that show any event.
var ErrNoScope = &domain.Error{Code: domain.InsufficientScope, Scope: string(auth.MessagesRead),
	Message: "this credential lacks the messages:read scope (or sms:read, or reports:read for call events)"}

// FilterFor builds what p may see, narrowed to types (nil: all) and lines
// (nil: all). A line p may not use is not_found, as in the inbox's lines
// filter, unless refresh is set: a stream re-reads its filter every second,
// and a line its person lost then only drops out.
func FilterFor(ctx context.Context, st *store.Store, p auth.Principal, types, lines []string, refresh bool) (*Filter, error) {
	msgScope := p.Has(auth.MessagesRead) || p.Has(auth.SMSRead)
	if !msgScope && !p.Has(auth.ReportsRead) {
		return nil, ErrNoScope
	}
	f := &Filter{UserID: p.UserID}
	if len(types) > 0 {
		f.Types = map[string]bool{}
		for _, t := range types {
			f.Types[t] = true
		}
	}
	if msgScope && (!p.IsUser() || p.Permissions.Numbers != domain.NumbersNone) {
		f.Messages = true
		if p.IsUser() || len(lines) > 0 {
			granted, err := auth.Lines(ctx, st, p)
			if err != nil {
				return nil, err
			}
			f.Lines = map[string]bool{}
			for _, l := range granted {
				f.Lines[l.Number] = true
			}
		}
	}
	if len(lines) > 0 {
		f.OnlyLines = true
		asked := map[string]bool{}
		for _, n := range lines {
			l, err := auth.FindLine(linesOf(f.Lines), n)
			if err != nil {
				if refresh {
					continue
				}
				return nil, err
			}
			asked[l.Number] = true
		}
		f.Lines = asked
	}
	f.Contacts = contacts.MayRead(p)
	if p.Has(auth.ReportsRead) && (!p.IsUser() || p.Permissions.CallReports) {
		f.Calls = true
		if p.Has(auth.RecordingsRead) && (!p.IsUser() || p.Permissions.AllowRecordings) {
			acct, err := st.Account(ctx, p.AccountID)
			if err != nil {
				return nil, err
			}
			f.Transcripts = !acct.SensitiveReverify
		}
	}
	if !f.Messages && !f.Calls {
		return nil, domain.Errorf(domain.PermissionDenied, "your role grants neither phone numbers nor call reports: no event would reach this stream")
	}
	return f, nil
}

func linesOf(numbers map[string]bool) []domain.Line {
	out := make([]domain.Line, 0, len(numbers))
	for n := range numbers {
		out = append(out, domain.Line{Number: n})
	}
	return out
}

// FilterFor is the package's FilterFor over the hub's store.
func (h *Hub) FilterFor(ctx context.Context, p auth.Principal, types, lines []string, refresh bool) (*Filter, error) {
	return FilterFor(ctx, h.cfg.Store, p, types, lines, refresh)
}
