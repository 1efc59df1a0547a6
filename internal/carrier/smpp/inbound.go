package smpp

import (
	"sync"
	"time"
)

// Inbound is a text from a handset, joined from its parts when it came in
// several.
type Inbound struct {
	Source, Dest Address
	Text         string
	DataCoding   byte // of the first part
	Parts        int
}

// concatInfo says where a part belongs: its reference, the number of parts
// and its own number (from 1).
type concatInfo struct {
	ref        int
	total, seq int
}

// userData splits a deliver_sm's user data into its text octets and its
// concatenation details. The text is short_message, or message_payload
// when short_message is empty. A user data header (esm_class 0x40) is
// read for IE 0x00 (8-bit reference) and IE 0x08 (16-bit reference); the
// sar_* parameters serve when there is no header. A header that runs past
// the data is left in the text rather than guessed at.
func userData(sm *SM) ([]byte, concatInfo, bool) {
	b := sm.ShortMessage
	if len(b) == 0 {
		if p, ok := sm.TLVs.Get(TagMessagePayload); ok {
			b = p
		}
	}
	if sm.ESMClass&ESMClassUDHI != 0 && len(b) > 0 && int(b[0])+1 <= len(b) {
		h, rest := b[1:1+int(b[0])], b[1+int(b[0]):]
		var ci concatInfo
		found := false
		for len(h) >= 2 {
			id, n := h[0], int(h[1])
			if 2+n > len(h) {
				break
			}
			v := h[2 : 2+n]
			switch {
			case id == 0x00 && n == 3:
				ci, found = concatInfo{ref: int(v[0]), total: int(v[1]), seq: int(v[2])}, true
			case id == 0x08 && n == 4:
				ci, found = concatInfo{ref: int(v[0])<<8 | int(v[1]), total: int(v[2]), seq: int(v[3])}, true
			}
			h = h[2+n:]
		}
		return rest, ci, found && ci.total > 1 && ci.seq >= 1 && ci.seq <= ci.total
	}
	ref, ok1 := sm.TLVs.Uint(TagSARMsgRefNum)
	total, ok2 := sm.TLVs.Uint(TagSARTotalSegments)
	seq, ok3 := sm.TLVs.Uint(TagSARSegmentSeqnum)
	ci := concatInfo{ref: ref, total: total, seq: seq}
	return b, ci, ok1 && ok2 && ok3 && total > 1 && seq >= 1 && seq <= total
}

// assembler holds the parts of concatenated texts until the last arrives.
// It is shared by a client's successive sessions, since an SMSC may send
// the rest of a text after a reconnect. Parts are kept in memory only: a
// restart loses a text whose parts were acknowledged but not all received.
type assembler struct {
	mu     sync.Mutex
	groups map[groupKey]*group
	maxAge time.Duration
	max    int
}

type groupKey struct {
	src, dst   string
	ref, total int
}

type group struct {
	first  time.Time
	parts  [][]byte
	coding []byte
	got    int
}

func newAssembler(maxAge time.Duration, max int) *assembler {
	return &assembler{groups: map[groupKey]*group{}, maxAge: maxAge, max: max}
}

// add files one deliver_sm that is not a receipt and returns the whole text
// once every part of it is in.
func (a *assembler) add(sm *SM, now time.Time) (Inbound, bool) {
	data, ci, concat := userData(sm)
	if !concat {
		return Inbound{Source: sm.Source, Dest: sm.Dest, Text: DecodeText(sm.DataCoding, data),
			DataCoding: sm.DataCoding, Parts: 1}, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, g := range a.groups {
		if now.Sub(g.first) > a.maxAge {
			delete(a.groups, k)
		}
	}
	key := groupKey{src: sm.Source.Addr, dst: sm.Dest.Addr, ref: ci.ref, total: ci.total}
	g := a.groups[key]
	if g == nil {
		if len(a.groups) >= a.max {
			a.evictOldest()
		}
		g = &group{first: now, parts: make([][]byte, ci.total), coding: make([]byte, ci.total)}
		a.groups[key] = g
	}
	if g.parts[ci.seq-1] == nil {
		g.got++
	}
	g.parts[ci.seq-1] = append([]byte{}, data...)
	g.coding[ci.seq-1] = sm.DataCoding
	if g.got < ci.total {
		return Inbound{}, false
	}
	delete(a.groups, key)
	in := Inbound{Source: sm.Source, Dest: sm.Dest, DataCoding: g.coding[0], Parts: ci.total}
	same := true
	for _, c := range g.coding {
		same = same && c == g.coding[0]
	}
	if same {
		// Joined before decoding: another sender may cut a surrogate pair
		// or an escape sequence between parts.
		var all []byte
		for _, p := range g.parts {
			all = append(all, p...)
		}
		in.Text = DecodeText(g.coding[0], all)
	} else {
		for i, p := range g.parts {
			in.Text += DecodeText(g.coding[i], p)
		}
	}
	return in, true
}

func (a *assembler) evictOldest() {
	var oldest groupKey
	var at time.Time
	for k, g := range a.groups {
		if at.IsZero() || g.first.Before(at) {
			oldest, at = k, g.first
		}
	}
	delete(a.groups, oldest)
}
