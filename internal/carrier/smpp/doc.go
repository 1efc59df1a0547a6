// Package smpp speaks SMPP 3.4 as an ESME (the application side): the PDU
// codec, the GSM 03.38 and UCS-2 encodings with concatenated segments, and a
// client that keeps one bind_transceiver up across reconnects.
//
// It knows nothing of Switchboard: addresses are strings, receipts and
// inbound texts are handed to callbacks, and the only package of ours it
// imports is package segment, the leaf that decides GSM-7 or UCS-2 and the
// segment count for the price, so that a text is sent in exactly the
// encoding and the number of parts it was quoted for.
//
// # Layers
//
//   - [PDU], [ReadPDU], [PDU.MarshalBinary], [Unmarshal]: the byte layouts
//     of the SMPP 3.4 specification (section 4) for the operations an ESME
//     transceiver needs (bind_transceiver, unbind, enquire_link, submit_sm,
//     deliver_sm, generic_nack and their responses), with every length
//     checked before it is used.
//   - [Split]: a text as submit_sm PDUs: data_coding 0 (GSM 03.38, one
//     septet per octet, unpacked, as SMSCs expect over SMPP) when it fits,
//     data_coding 8 (UTF-16BE) otherwise; several parts with a user data
//     header (IE 0x00, 8-bit reference) and esm_class 0x40 when it is long.
//   - [Client]: dials (TCP or TLS) and binds, keeps a window of unanswered
//     submits, answers and sends enquire_link, reconnects with backoff across
//     a list of addresses, and hands receipts and inbound texts (joined from
//     their parts) to [Config.OnReceipt] and [Config.OnInbound].
//
// docs/decisions.md ("SMPP 3.4") records the choices and what is not
// supported.
package smpp
