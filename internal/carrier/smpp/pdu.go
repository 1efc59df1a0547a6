package smpp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// CommandID identifies an operation (SMPP 3.4 section 5.1.2). A response's
// id is its request's with the top bit set.
type CommandID uint32

// The operations this package encodes and decodes.
const (
	CmdGenericNack         CommandID = 0x80000000
	CmdBindTransceiver     CommandID = 0x00000009
	CmdBindTransceiverResp CommandID = 0x80000009
	CmdSubmitSM            CommandID = 0x00000004
	CmdSubmitSMResp        CommandID = 0x80000004
	CmdDeliverSM           CommandID = 0x00000005
	CmdDeliverSMResp       CommandID = 0x80000005
	CmdUnbind              CommandID = 0x00000006
	CmdUnbindResp          CommandID = 0x80000006
	CmdEnquireLink         CommandID = 0x00000015
	CmdEnquireLinkResp     CommandID = 0x80000015
)

var commandNames = map[CommandID]string{
	CmdGenericNack:         "generic_nack",
	CmdBindTransceiver:     "bind_transceiver",
	CmdBindTransceiverResp: "bind_transceiver_resp",
	CmdSubmitSM:            "submit_sm",
	CmdSubmitSMResp:        "submit_sm_resp",
	CmdDeliverSM:           "deliver_sm",
	CmdDeliverSMResp:       "deliver_sm_resp",
	CmdUnbind:              "unbind",
	CmdUnbindResp:          "unbind_resp",
	CmdEnquireLink:         "enquire_link",
	CmdEnquireLinkResp:     "enquire_link_resp",
}

func (c CommandID) String() string {
	if n, ok := commandNames[c]; ok {
		return n
	}
	return fmt.Sprintf("command 0x%08X", uint32(c))
}

// IsResponse reports whether c is a response (generic_nack included).
func (c CommandID) IsResponse() bool { return c&0x80000000 != 0 }

// Response is the id of the response to request c.
func (c CommandID) Response() CommandID { return c | 0x80000000 }

// HeaderLen is the size of the header every PDU starts with: command_length,
// command_id, command_status and sequence_number, four octets each.
const HeaderLen = 16

// DefaultMaxPDULength bounds command_length when reading. The specification
// sets no maximum; 64 KiB holds any short message and a message_payload of
// any text an SMS can carry, and keeps a corrupt length from making the
// reader allocate gigabytes.
const DefaultMaxPDULength = 64 * 1024

// Maximum lengths of C-octet strings, counting the terminating NUL, as the
// specification's tables give them ("Var. max 16").
const (
	maxSystemID     = 16
	maxPassword     = 9
	maxSystemType   = 13
	maxAddressRange = 41
	maxServiceType  = 6
	maxAddr         = 21
	maxTime         = 17 // absent (NUL alone) or 16 characters and NUL
	maxMessageID    = 65
	maxShortMessage = 254
)

// InterfaceVersion is the interface_version a bind carries for SMPP 3.4.
const InterfaceVersion = 0x34

// PDU is one protocol data unit. Body is nil for the operations that have
// none (enquire_link, unbind, generic_nack and their responses); otherwise
// it is the pointer type listed for the command:
//
//	bind_transceiver                 *Bind
//	bind_transceiver_resp            *BindResp
//	submit_sm, deliver_sm            *SM
//	submit_sm_resp, deliver_sm_resp  *SMResp
//	any other command                *Raw (decoded only, never encoded)
type PDU struct {
	Command CommandID
	Status  Status
	Seq     uint32
	Body    any
}

// Bind is the body of bind_transceiver (section 4.1.5).
type Bind struct {
	SystemID         string
	Password         string
	SystemType       string
	InterfaceVersion byte
	AddrTON, AddrNPI byte
	AddressRange     string
}

// BindResp is the body of bind_transceiver_resp: the SMSC's system_id and,
// optionally, sc_interface_version.
type BindResp struct {
	SystemID string
	TLVs     TLVs
}

// Address is a type of number, a numbering plan and the address itself.
type Address struct {
	TON, NPI byte
	Addr     string
}

// SM is the body shared by submit_sm (section 4.4.1) and deliver_sm
// (section 4.6.1), whose layouts are the same.
type SM struct {
	ServiceType          string
	Source               Address
	Dest                 Address
	ESMClass             byte
	ProtocolID           byte
	PriorityFlag         byte
	ScheduleDeliveryTime string
	ValidityPeriod       string
	RegisteredDelivery   byte
	ReplaceIfPresent     byte
	DataCoding           byte
	DefaultMsgID         byte
	ShortMessage         []byte // at most 254 octets; sm_length is its length
	TLVs                 TLVs
}

// SMResp is the body of submit_sm_resp and deliver_sm_resp. An SMSC may
// leave the body out of a response with an error status; it then decodes
// with an empty MessageID.
type SMResp struct {
	MessageID string
}

// Raw is the undecoded body of a command this package does not know.
type Raw []byte

// ErrUnknownCommand is wrapped by the error Unmarshal returns for a
// command_id it does not know; the PDU still carries the header, so a
// session can answer generic_nack with ESME_RINVCMDID.
var ErrUnknownCommand = errors.New("smpp: unknown command_id")

// FrameError is a command_length that cannot be right: shorter than the
// header or longer than the reader accepts. The stream cannot be resynchronised
// after one.
type FrameError struct {
	Length uint32
	Max    int
}

func (e *FrameError) Error() string {
	if e.Length < HeaderLen {
		return fmt.Sprintf("smpp: command_length %d is shorter than the %d-octet header", e.Length, HeaderLen)
	}
	return fmt.Sprintf("smpp: command_length %d exceeds the maximum PDU size of %d octets", e.Length, e.Max)
}

// DecodeError is a PDU whose length was plausible but whose body is not
// what its command says: a field runs past the end, a C-octet string is
// longer than its maximum or not terminated, octets are left over.
type DecodeError struct {
	Command CommandID
	Field   string
	Reason  string
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("smpp: malformed %s: %s", e.Command, e.Reason)
	}
	return fmt.Sprintf("smpp: malformed %s: %s: %s", e.Command, e.Field, e.Reason)
}

// ReadPDU reads one PDU from r. max bounds command_length (0 means
// DefaultMaxPDULength). A *FrameError or an I/O error leaves r unusable; a
// *DecodeError or ErrUnknownCommand comes with the PDU's header (Body nil
// or *Raw) so the caller can answer it and read on.
func ReadPDU(r io.Reader, max int) (*PDU, error) {
	if max <= 0 {
		max = DefaultMaxPDULength
	}
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if n < HeaderLen || uint64(n) > uint64(max) {
		return nil, &FrameError{Length: n, Max: max}
	}
	b := make([]byte, n)
	copy(b, lenBuf[:])
	if _, err := io.ReadFull(r, b[4:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("smpp: PDU truncated: %w", err)
	}
	return Unmarshal(b)
}

// Unmarshal decodes one whole PDU, header included. Its command_length must
// equal len(b).
func Unmarshal(b []byte) (*PDU, error) {
	if len(b) < HeaderLen {
		return nil, &FrameError{Length: uint32(len(b))}
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) != uint64(len(b)) {
		return nil, &DecodeError{Command: CommandID(binary.BigEndian.Uint32(b[4:])), Field: "command_length",
			Reason: fmt.Sprintf("says %d octets, PDU has %d", n, len(b))}
	}
	p := &PDU{
		Command: CommandID(binary.BigEndian.Uint32(b[4:])),
		Status:  Status(binary.BigEndian.Uint32(b[8:])),
		Seq:     binary.BigEndian.Uint32(b[12:]),
	}
	d := &decoder{b: b[HeaderLen:], cmd: p.Command}
	switch p.Command {
	case CmdGenericNack, CmdUnbind, CmdUnbindResp, CmdEnquireLink, CmdEnquireLinkResp:
		// header only
	case CmdBindTransceiver:
		p.Body = d.bind()
	case CmdBindTransceiverResp:
		if len(d.b) > 0 || p.Status == StatusOK {
			p.Body = &BindResp{SystemID: d.cstring("system_id", maxSystemID), TLVs: d.tlvs()}
		} else {
			p.Body = &BindResp{}
		}
	case CmdSubmitSM, CmdDeliverSM:
		p.Body = d.sm()
	case CmdSubmitSMResp, CmdDeliverSMResp:
		r := &SMResp{}
		if len(d.b) > 0 {
			r.MessageID = d.cstring("message_id", maxMessageID)
		}
		p.Body = r
	default:
		p.Body = Raw(append([]byte(nil), d.b...))
		return p, fmt.Errorf("%w 0x%08X", ErrUnknownCommand, uint32(p.Command))
	}
	if d.err == nil && d.off != len(d.b) {
		d.fail("", fmt.Sprintf("%d octets left over after the last field", len(d.b)-d.off))
	}
	if d.err != nil {
		p.Body = nil
		return p, d.err
	}
	return p, nil
}

// decoder reads fields in order; the first failure sticks and later reads
// return zero values, so a body is decoded as straight-line code.
type decoder struct {
	b   []byte
	off int
	cmd CommandID
	err error
}

func (d *decoder) fail(field, reason string) {
	if d.err == nil {
		d.err = &DecodeError{Command: d.cmd, Field: field, Reason: reason}
	}
}

func (d *decoder) u8(field string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail(field, "truncated")
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) bytes(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b)-d.off {
		d.fail(field, fmt.Sprintf("truncated: %d octets announced, %d left", n, len(d.b)-d.off))
		return nil
	}
	v := append([]byte(nil), d.b[d.off:d.off+n]...)
	d.off += n
	return v
}

// cstring reads a NUL-terminated string of at most max octets, NUL counted.
func (d *decoder) cstring(field string, max int) string {
	if d.err != nil {
		return ""
	}
	rest := d.b[d.off:]
	for i := 0; i < len(rest) && i < max; i++ {
		if rest[i] == 0 {
			d.off += i + 1
			return string(rest[:i])
		}
	}
	if len(rest) < max {
		d.fail(field, "truncated: no terminating NUL")
	} else {
		d.fail(field, fmt.Sprintf("not terminated within %d octets", max))
	}
	return ""
}

// timeField reads schedule_delivery_time or validity_period: NUL alone, or
// the 16-character absolute or relative form.
func (d *decoder) timeField(field string) string {
	s := d.cstring(field, maxTime)
	if d.err == nil && len(s) != 0 && len(s) != maxTime-1 {
		d.fail(field, fmt.Sprintf("%d characters, want 0 or %d", len(s), maxTime-1))
	}
	return s
}

func (d *decoder) address(prefix string, max int) Address {
	return Address{
		TON:  d.u8(prefix + "_ton"),
		NPI:  d.u8(prefix + "_npi"),
		Addr: d.cstring(prefix, max),
	}
}

func (d *decoder) bind() *Bind {
	b := &Bind{
		SystemID:         d.cstring("system_id", maxSystemID),
		Password:         d.cstring("password", maxPassword),
		SystemType:       d.cstring("system_type", maxSystemType),
		InterfaceVersion: d.u8("interface_version"),
		AddrTON:          d.u8("addr_ton"),
		AddrNPI:          d.u8("addr_npi"),
		AddressRange:     d.cstring("address_range", maxAddressRange),
	}
	return b
}

func (d *decoder) sm() *SM {
	s := &SM{ServiceType: d.cstring("service_type", maxServiceType)}
	src := d.address("source_addr", maxAddr)
	s.Source = src
	s.Dest = Address{TON: d.u8("dest_addr_ton"), NPI: d.u8("dest_addr_npi"), Addr: d.cstring("destination_addr", maxAddr)}
	s.ESMClass = d.u8("esm_class")
	s.ProtocolID = d.u8("protocol_id")
	s.PriorityFlag = d.u8("priority_flag")
	s.ScheduleDeliveryTime = d.timeField("schedule_delivery_time")
	s.ValidityPeriod = d.timeField("validity_period")
	s.RegisteredDelivery = d.u8("registered_delivery")
	s.ReplaceIfPresent = d.u8("replace_if_present_flag")
	s.DataCoding = d.u8("data_coding")
	s.DefaultMsgID = d.u8("sm_default_msg_id")
	n := int(d.u8("sm_length"))
	if d.err == nil && n > maxShortMessage {
		d.fail("sm_length", fmt.Sprintf("%d exceeds %d", n, maxShortMessage))
	}
	s.ShortMessage = d.bytes("short_message", n)
	s.TLVs = d.tlvs()
	return s
}

// MarshalBinary encodes p, header included, checking every field against
// its maximum length so that a PDU this package writes is one it would read.
func (p *PDU) MarshalBinary() ([]byte, error) {
	e := &encoder{b: make([]byte, HeaderLen, 64), cmd: p.Command}
	switch body := p.Body.(type) {
	case nil:
		switch p.Command {
		case CmdGenericNack, CmdUnbind, CmdUnbindResp, CmdEnquireLink, CmdEnquireLinkResp:
		case CmdSubmitSMResp, CmdDeliverSMResp, CmdBindTransceiverResp:
			// An error response may go without a body.
			if p.Status == StatusOK {
				return nil, fmt.Errorf("smpp: encode %s: no body", p.Command)
			}
		default:
			return nil, fmt.Errorf("smpp: encode %s: no body", p.Command)
		}
	case *Bind:
		if p.Command != CmdBindTransceiver {
			return nil, fmt.Errorf("smpp: encode %s: body is a bind", p.Command)
		}
		e.cstring("system_id", body.SystemID, maxSystemID)
		e.cstring("password", body.Password, maxPassword)
		e.cstring("system_type", body.SystemType, maxSystemType)
		e.u8(body.InterfaceVersion)
		e.u8(body.AddrTON)
		e.u8(body.AddrNPI)
		e.cstring("address_range", body.AddressRange, maxAddressRange)
	case *BindResp:
		if p.Command != CmdBindTransceiverResp {
			return nil, fmt.Errorf("smpp: encode %s: body is a bind response", p.Command)
		}
		e.cstring("system_id", body.SystemID, maxSystemID)
		e.tlvs(body.TLVs)
	case *SM:
		if p.Command != CmdSubmitSM && p.Command != CmdDeliverSM {
			return nil, fmt.Errorf("smpp: encode %s: body is a short message", p.Command)
		}
		e.sm(body)
	case *SMResp:
		if p.Command != CmdSubmitSMResp && p.Command != CmdDeliverSMResp {
			return nil, fmt.Errorf("smpp: encode %s: body is a short message response", p.Command)
		}
		e.cstring("message_id", body.MessageID, maxMessageID)
	default:
		return nil, fmt.Errorf("smpp: encode %s: unsupported body %T", p.Command, p.Body)
	}
	if e.err != nil {
		return nil, e.err
	}
	binary.BigEndian.PutUint32(e.b[0:], uint32(len(e.b)))
	binary.BigEndian.PutUint32(e.b[4:], uint32(p.Command))
	binary.BigEndian.PutUint32(e.b[8:], uint32(p.Status))
	binary.BigEndian.PutUint32(e.b[12:], p.Seq)
	return e.b, nil
}

type encoder struct {
	b   []byte
	cmd CommandID
	err error
}

func (e *encoder) fail(field, reason string) {
	if e.err == nil {
		e.err = fmt.Errorf("smpp: encode %s: %s: %s", e.cmd, field, reason)
	}
}

func (e *encoder) u8(v byte) { e.b = append(e.b, v) }

func (e *encoder) cstring(field, s string, max int) {
	if len(s) > max-1 {
		e.fail(field, fmt.Sprintf("%d octets, at most %d allowed", len(s), max-1))
		return
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			e.fail(field, "contains NUL")
			return
		}
	}
	e.b = append(e.b, s...)
	e.b = append(e.b, 0)
}

func (e *encoder) timeField(field, s string) {
	if len(s) != 0 && len(s) != maxTime-1 {
		e.fail(field, fmt.Sprintf("%d characters, want 0 or %d", len(s), maxTime-1))
		return
	}
	e.cstring(field, s, maxTime)
}

func (e *encoder) sm(s *SM) {
	e.cstring("service_type", s.ServiceType, maxServiceType)
	e.u8(s.Source.TON)
	e.u8(s.Source.NPI)
	e.cstring("source_addr", s.Source.Addr, maxAddr)
	e.u8(s.Dest.TON)
	e.u8(s.Dest.NPI)
	e.cstring("destination_addr", s.Dest.Addr, maxAddr)
	e.u8(s.ESMClass)
	e.u8(s.ProtocolID)
	e.u8(s.PriorityFlag)
	e.timeField("schedule_delivery_time", s.ScheduleDeliveryTime)
	e.timeField("validity_period", s.ValidityPeriod)
	e.u8(s.RegisteredDelivery)
	e.u8(s.ReplaceIfPresent)
	e.u8(s.DataCoding)
	e.u8(s.DefaultMsgID)
	if len(s.ShortMessage) > maxShortMessage {
		e.fail("short_message", fmt.Sprintf("%d octets, at most %d allowed (use message_payload)", len(s.ShortMessage), maxShortMessage))
		return
	}
	e.u8(byte(len(s.ShortMessage)))
	e.b = append(e.b, s.ShortMessage...)
	e.tlvs(s.TLVs)
}
