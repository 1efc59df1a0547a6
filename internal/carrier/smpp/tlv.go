package smpp

import (
	"encoding/binary"
	"fmt"
)

// Tag identifies an optional parameter (SMPP 3.4 section 5.3.2).
type Tag uint16

// The optional parameters this package reads or writes. Others are kept as
// they came and passed over.
const (
	TagReceiptedMessageID   Tag = 0x001E
	TagUserMessageReference Tag = 0x0204
	TagSARMsgRefNum         Tag = 0x020C
	TagSARTotalSegments     Tag = 0x020E
	TagSARSegmentSeqnum     Tag = 0x020F
	TagSCInterfaceVersion   Tag = 0x0210
	TagNetworkErrorCode     Tag = 0x0423
	TagMessagePayload       Tag = 0x0424
	TagMessageState         Tag = 0x0427
)

// tlvSize holds the fixed value lengths the specification gives; a TLV of
// one of these tags with another length is malformed.
var tlvSize = map[Tag]int{
	TagUserMessageReference: 2,
	TagSARMsgRefNum:         2,
	TagSARTotalSegments:     1,
	TagSARSegmentSeqnum:     1,
	TagSCInterfaceVersion:   1,
	TagNetworkErrorCode:     3,
	TagMessageState:         1,
}

// TLV is one optional parameter: its tag and value (the length is the
// value's).
type TLV struct {
	Tag   Tag
	Value []byte
}

// TLVs are the optional parameters of a PDU in the order they came.
type TLVs []TLV

// Get returns the value of the first parameter with tag t.
func (ts TLVs) Get(t Tag) ([]byte, bool) {
	for _, tv := range ts {
		if tv.Tag == t {
			return tv.Value, true
		}
	}
	return nil, false
}

// CString returns the value of a C-octet string parameter without its NUL.
// An SMSC that leaves the NUL out is tolerated.
func (ts TLVs) CString(t Tag) (string, bool) {
	v, ok := ts.Get(t)
	if !ok {
		return "", false
	}
	for i, c := range v {
		if c == 0 {
			return string(v[:i]), true
		}
	}
	return string(v), true
}

// Uint returns the value of an integer parameter (one or two octets).
func (ts TLVs) Uint(t Tag) (int, bool) {
	v, ok := ts.Get(t)
	switch {
	case !ok:
		return 0, false
	case len(v) == 1:
		return int(v[0]), true
	case len(v) == 2:
		return int(binary.BigEndian.Uint16(v)), true
	}
	return 0, false
}

// CStringTLV makes a C-octet string parameter (the NUL added).
func CStringTLV(t Tag, s string) TLV {
	return TLV{Tag: t, Value: append([]byte(s), 0)}
}

// tlvs reads optional parameters until the body ends.
func (d *decoder) tlvs() TLVs {
	var out TLVs
	for d.err == nil && d.off < len(d.b) {
		if len(d.b)-d.off < 4 {
			d.fail("optional parameters", fmt.Sprintf("%d octets left, a TLV header needs 4", len(d.b)-d.off))
			return nil
		}
		tag := Tag(binary.BigEndian.Uint16(d.b[d.off:]))
		n := int(binary.BigEndian.Uint16(d.b[d.off+2:]))
		d.off += 4
		field := fmt.Sprintf("TLV 0x%04X", uint16(tag))
		v := d.bytes(field, n)
		if d.err != nil {
			return nil
		}
		if want, ok := tlvSize[tag]; ok && n != want {
			d.fail(field, fmt.Sprintf("value of %d octets, want %d", n, want))
			return nil
		}
		if tag == TagReceiptedMessageID && n > maxMessageID {
			d.fail(field, fmt.Sprintf("receipted_message_id of %d octets, at most %d", n, maxMessageID))
			return nil
		}
		out = append(out, TLV{Tag: tag, Value: v})
	}
	return out
}

func (e *encoder) tlvs(ts TLVs) {
	for _, tv := range ts {
		if len(tv.Value) > 0xFFFF {
			e.fail(fmt.Sprintf("TLV 0x%04X", uint16(tv.Tag)), "value longer than 65535 octets")
			return
		}
		if want, ok := tlvSize[tv.Tag]; ok && len(tv.Value) != want {
			e.fail(fmt.Sprintf("TLV 0x%04X", uint16(tv.Tag)), fmt.Sprintf("value of %d octets, want %d", len(tv.Value), want))
			return
		}
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(tv.Tag))
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(len(tv.Value)))
		e.b = append(e.b, tv.Value...)
	}
}
