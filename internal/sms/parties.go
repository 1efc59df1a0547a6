package sms

import (
	"context"
	"sync"
)

// recentParties is how many sends' line and recipients a process remembers
// for their receipts: the sends of a few seconds at the highest rates
// measured (a receipt comes seconds after its send), about 5 MB at most.
const recentParties = 1 << 16

// parties remembers the line and recipients of the newest messages this
// process handed to the carrier, so that their receipts' events (built here,
// written by the store in the receipt's transaction) need no read of the
// message: a message's line and recipients never change. A receipt for a
// message it does not remember (sent by another node, before a restart, or
// long ago) reads them from the store.
type parties struct {
	mu    sync.Mutex
	byID  map[int64]party
	order []int64 // a ring of the remembered ids, oldest at next
	next  int
}

type party struct {
	line string
	to   []string
}

// remember records message id's line and recipients, forgetting the oldest
// beyond recentParties.
func (p *parties) remember(id int64, line string, to []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byID == nil {
		p.byID = make(map[int64]party)
		p.order = make([]int64, 0, recentParties)
	}
	if _, ok := p.byID[id]; ok {
		return
	}
	if len(p.order) < recentParties {
		p.order = append(p.order, id)
	} else {
		delete(p.byID, p.order[p.next])
		p.order[p.next] = id
		p.next = (p.next + 1) % recentParties
	}
	p.byID[id] = party{line, to}
}

// partiesOf returns the line and recipients of outbound message id.
func (s *Service) partiesOf(ctx context.Context, id int64) (string, []string, error) {
	s.parties.mu.Lock()
	pt, ok := s.parties.byID[id]
	s.parties.mu.Unlock()
	if ok {
		return pt.line, pt.to, nil
	}
	return s.store.OutboundParties(ctx, id)
}
