package smpp

import "strings"

// Type of number and numbering plan values (SMPP 3.4 sections 5.2.5, 5.2.6)
// that DefaultAddress chooses among.
const (
	TONUnknown         byte = 0
	TONInternational   byte = 1
	TONNetworkSpecific byte = 3
	TONAlphanumeric    byte = 5
	NPIUnknown         byte = 0
	NPIISDN            byte = 1 // E.163/E.164
)

// DefaultAddress gives an address the type of number and numbering plan
// most SMSCs expect when nothing is configured: an E.164 number (a leading
// "+", or 9 digits and more) is international/ISDN and sent without its
// "+"; a short code (8 digits or fewer) is network-specific; a sender name
// with letters is alphanumeric. Carriers differ here, which is why a
// connection's configuration may override both.
func DefaultAddress(s string) Address {
	digits := strings.TrimPrefix(s, "+")
	allDigits := digits != ""
	for _, c := range digits {
		allDigits = allDigits && c >= '0' && c <= '9'
	}
	switch {
	case allDigits && (len(digits) != len(s) || len(digits) > 8):
		return Address{TON: TONInternational, NPI: NPIISDN, Addr: digits}
	case allDigits:
		return Address{TON: TONNetworkSpecific, NPI: NPIUnknown, Addr: digits}
	case s == "":
		return Address{}
	}
	return Address{TON: TONAlphanumeric, NPI: NPIUnknown, Addr: s}
}
