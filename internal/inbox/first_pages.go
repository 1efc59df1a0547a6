package inbox

import (
	"context"
	"strconv"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// ListEncoded is List with the answer encoded by encode. The first page of
// each filter (offset 0), which clients ask for all day, is kept encoded
// (store.FirstPage) while the database does not change, and answered
// without a query; deeper pages read the database every time.
//
// The key holds everything besides the database that the answer depends
// on: the caller (account, user, and the role's access to lines, which
// decides the lines it sees) and the parameters. Errors are not kept.
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
	return s.store.FirstPage(ctx, firstPageKey(p, lp), load)
}

func firstPageKey(p auth.Principal, lp ListParams) string {
	b := make([]byte, 0, 64)
	b = append(b, "conversations:"...)
	b = strconv.AppendInt(b, p.AccountID, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, p.UserID, 10)
	b = append(b, ':')
	b = append(b, p.Permissions.Numbers...)
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
	if lp.Lines != nil {
		// Quoted: no line name, however odd, can pass for two.
		b = append(b, ":lines"...)
		for _, l := range lp.Lines {
			b = append(b, ',')
			b = strconv.AppendQuote(b, l)
		}
	}
	return string(b)
}
