package inbox

import (
	"context"
	"strconv"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// ListEncoded is List with the answer encoded by encode. The first page of
// each filter (offset 0), which clients ask for all day, is kept encoded
// (store.FirstPage) while the database does not change, and answered
// without a query; deeper pages read the database every time.
//
// The key holds everything besides the database that the answer depends
// on: the caller (callerKey) and the parameters. Errors are not kept.
func (s *Service) ListEncoded(ctx context.Context, p auth.Principal, lp ListParams, encode func([]domain.ConversationSummary) ([]byte, error)) ([]byte, error) {
	load := func() ([]byte, error) {
		page, err := s.List(ctx, p, lp)
		if err != nil {
			return nil, err
		}
		return encode(page)
	}
	if lp.Offset != 0 {
		return load()
	}
	return s.store.FirstPage(ctx, p.AccountID, firstPageKey(p, lp), load)
}

// UnreadEncoded is Unread with the answer encoded by encode, kept like a
// first page: every client asks for its counts all day, and they move only
// with the database. Counts since a time read the database every time.
func (s *Service) UnreadEncoded(ctx context.Context, p auth.Principal, lines []string, since time.Time, encode func([]domain.LineUnread) ([]byte, error)) ([]byte, error) {
	load := func() ([]byte, error) {
		counts, err := s.Unread(ctx, p, lines, since)
		if err != nil {
			return nil, err
		}
		return encode(counts)
	}
	if !since.IsZero() {
		return load()
	}
	return s.store.FirstPage(ctx, p.AccountID, string(appendLines(callerKey("unread", p), lines)), load)
}

// callerKey starts a kept answer's key with what, besides the database and
// the parameters, the answer depends on: the caller (account, user, and the
// role's access to lines, which decides the lines it sees).
func callerKey(kind string, p auth.Principal) []byte {
	b := make([]byte, 0, 64)
	b = append(b, kind...)
	b = append(b, ':')
	b = strconv.AppendInt(b, p.AccountID, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, p.UserID, 10)
	b = append(b, ':')
	b = append(b, p.Permissions.Numbers...)
	return b
}

// appendLines adds a lines parameter to a key (nil, every line, adds
// nothing); each line quoted, so that no line name, however odd, can pass
// for two.
func appendLines(b []byte, lines []string) []byte {
	if lines == nil {
		return b
	}
	b = append(b, ":lines"...)
	for _, l := range lines {
		b = append(b, ',')
		b = strconv.AppendQuote(b, l)
	}
	return b
}

func firstPageKey(p auth.Principal, lp ListParams) string {
	b := callerKey("conversations", p)
	b = append(b, ':')
	for _, f := range []bool{lp.Unread, lp.Unresolved, lp.Resolved, lp.AssignedToMe, lp.Unassigned} {
		if f {
			b = append(b, '1')
		} else {
			b = append(b, '0')
		}
	}
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(lp.Limit), 10)
	return string(appendLines(b, lp.Lines))
}
