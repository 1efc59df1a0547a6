package smpp

import (
	"fmt"

	"switchboard/internal/segment"
)

// esm_class bits (SMPP 3.4 section 5.2.12).
const (
	ESMClassUDHI         byte = 0x40 // short_message starts with a user data header
	esmMessageTypeMask   byte = 0x3C
	ESMClassReceipt      byte = 0x04 // SMSC delivery receipt (deliver_sm)
	ESMClassIntermediate byte = 0x20 // intermediate delivery notification
)

// registered_delivery values (section 5.2.17).
const (
	// ReceiptFinal asks for a receipt on the final outcome, delivered or not.
	ReceiptFinal byte = 0x01
	// ReceiptFailure asks for a receipt only when delivery fails.
	ReceiptFailure byte = 0x02
)

// Room in one short message, in octets of short_message: a GSM 03.38 septet
// takes an octet (unpacked), a UTF-16 unit two. A concatenated part loses
// the six octets of its user data header (seven septets once the SMSC packs
// it for the air, hence 153 and not 154).
const (
	gsmSingle  = 160
	gsmMulti   = 153
	ucs2Single = 140
	ucs2Multi  = 134
	udhLen     = 6
	maxParts   = 255
)

// Message is a text to submit.
type Message struct {
	Source, Dest Address
	Text         string
	// RegisteredDelivery is sent as registered_delivery; ReceiptFinal asks
	// for the receipt the caller matches by message_id.
	RegisteredDelivery byte
	ServiceType        string
	ValidityPeriod     string // empty, or the specification's 16-character form
}

// Split makes the submit_sm bodies for m: one when the text fits in one
// short message, otherwise one per segment, each with a user data header
// (IE 0x00: ref, the number of parts and its own number) and esm_class
// 0x40. ref is the concatenation reference; all parts of a message share
// it and messages to one handset should not (a [Client] hands them out in
// turn).
//
// The encoding and the number of parts are package segment's, which is how
// the text was quoted and priced: GSM 03.38 (data_coding 0) when every
// character is in the default alphabet or its extension table, otherwise
// UTF-16BE (data_coding 8). A character is never cut in two: an extension
// character (ESC and its septet) and a surrogate pair each stay in one
// part. An empty text is one empty short message.
func Split(m Message, ref byte) ([]*SM, error) {
	count := segment.Of(m.Text)
	coding, single, multi := CodingDefault, gsmSingle, gsmMulti
	if count.Encoding == segment.UCS2 {
		coding, single, multi = CodingUCS2, ucs2Single, ucs2Multi
	}
	var chars [][]byte
	total := 0
	for _, r := range m.Text {
		var b []byte
		if coding == CodingUCS2 {
			b = encodeUCS2(r)
		} else if b = gsmSeptets(r); b == nil {
			return nil, fmt.Errorf("smpp: %U is not in GSM 03.38 although package segment counts it", r)
		}
		chars = append(chars, b)
		total += len(b)
	}
	base := SM{
		ServiceType:        m.ServiceType,
		Source:             m.Source,
		Dest:               m.Dest,
		ValidityPeriod:     m.ValidityPeriod,
		RegisteredDelivery: m.RegisteredDelivery,
		DataCoding:         coding,
	}
	if total <= single {
		sm := base
		sm.ShortMessage = make([]byte, 0, total)
		for _, c := range chars {
			sm.ShortMessage = append(sm.ShortMessage, c...)
		}
		return []*SM{&sm}, nil
	}
	var parts [][]byte
	cur := []byte(nil)
	for _, c := range chars {
		if len(cur)+len(c) > multi {
			parts, cur = append(parts, cur), nil
		}
		cur = append(cur, c...)
	}
	parts = append(parts, cur)
	if len(parts) != count.Segments {
		return nil, fmt.Errorf("smpp: text split into %d parts, package segment counts %d", len(parts), count.Segments)
	}
	if len(parts) > maxParts {
		return nil, fmt.Errorf("smpp: text needs %d parts, a concatenated message holds at most %d", len(parts), maxParts)
	}
	out := make([]*SM, len(parts))
	for i, p := range parts {
		sm := base
		sm.ESMClass = ESMClassUDHI
		sm.ShortMessage = append([]byte{udhLen - 1, 0x00, 0x03, ref, byte(len(parts)), byte(i + 1)}, p...)
		out[i] = &sm
	}
	return out, nil
}
