package phone

import (
	"errors"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/nyaruka/phonenumbers"
)

// E.164 caps a number at 15 digits, and libphonenumber's metadata has no
// valid number shorter than 6 with its country code (Niue and Tokelau have
// 7-digit ones), so both bounds reject input before the comparatively
// expensive parse without deciding anything the library would not.
const (
	minDigits = 6
	maxDigits = 15
)

// Normalize strips formatting from s and returns the bare digits with a
// country code, reporting false if s is not a phone number.
//
// Only formatting is removed: spaces (any Unicode space separator, so pasted
// non-breaking spaces work), '-', '.', '(', ')', '/', and one '+' before the
// first digit. Anything else, including letters (vanity numbers) and
// non-ASCII digits, is rejected rather than guessed at. A 10-digit result
// without a '+' is a North American number written without its country code
// and gets a leading 1; every other number is taken to already include one.
func Normalize(s string) (string, bool) {
	// Digits are ASCII, so the result is never longer than s; sizing the
	// buffer up front keeps this to a single allocation.
	buf := make([]byte, 1, len(s)+1)
	buf[0] = '1' // dropped below unless the number has 10 digits
	buf, plus, ok := strip(buf, s)
	digits := buf[1:]
	switch {
	case !ok || len(digits) == 0:
		return "", false
	case len(digits) == 10 && !plus:
		// With a '+' the writer declared an international number, which the
		// spec says is used as given; only a bare 10-digit number is North
		// American without its country code.
		return string(buf), true
	}
	return string(digits), true
}

// Digits strips the same formatting as Normalize and returns the digits as
// written, never adding a country code: a sending number ("from") must be
// given in full, because the spec says it is never guessed.
func Digits(s string) (string, bool) {
	buf, _, ok := strip(make([]byte, 0, len(s)), s)
	if !ok || len(buf) == 0 {
		return "", false
	}
	return string(buf), true
}

// strip appends the digits of s to buf, reporting whether s had a leading
// '+' and whether everything else in it was formatting.
func strip(buf []byte, s string) (_ []byte, plus, ok bool) {
	n := len(buf)
	for _, r := range s {
		switch {
		case '0' <= r && r <= '9':
			buf = append(buf, byte(r))
		case r == '+':
			// A plus only means "international prefix" in front of the
			// number; a second one, or one among the digits, is not
			// formatting.
			if plus || len(buf) > n {
				return buf, plus, false
			}
			plus = true
		case r == '-', r == '.', r == '(', r == ')', r == '/', unicode.Is(unicode.Zs, r):
		default:
			return buf, plus, false
		}
	}
	return buf, plus, true
}

// Dialable reports whether digits, a number as returned by Normalize, is a
// valid number according to libphonenumber's metadata for its country.
//
// The number must also be valid exactly as written: libphonenumber quietly
// repairs some input (it drops a national trunk prefix, so +44 0 20... parses
// as +44 20...), but the digits are what gets dialled and de-duplicated, so
// a number that only validates after such a repair is rejected.
func Dialable(digits string) bool {
	// Only numbers of a possible length reach the cache: its keys are the
	// caller's strings, and 100,000 of 60,000 digits each would be 6 GB.
	if len(digits) < minDigits || len(digits) > maxDigits {
		return false
	}
	if v, ok := dialable.Load(digits); ok {
		return v.(bool)
	}
	ok := dialableUncached(digits)
	// libphonenumber costs tens of microseconds a number and the same numbers
	// come back again and again; the cache is dropped when it grows too big.
	if dialableSize.Add(1) > maxCached {
		dialable.Clear()
		dialableSize.Store(0)
	}
	dialable.Store(digits, ok)
	return ok
}

const maxCached = 100_000

var (
	dialable     sync.Map // digits → bool
	dialableSize atomic.Int64
)

func dialableUncached(digits string) bool {
	if len(digits) < minDigits || len(digits) > maxDigits {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	// The leading '+' makes libphonenumber read the country code from the
	// number itself, so no default region is involved.
	num, err := phonenumbers.Parse("+"+digits, "")
	if err != nil {
		return false
	}
	return phonenumbers.IsValidNumber(num) &&
		phonenumbers.Format(num, phonenumbers.E164) == "+"+digits
}

// ErrNotNumber and ErrNotDialable are the reasons Parse refuses a number.
var (
	ErrNotNumber   = errors.New("not a phone number: only digits, spaces, - . ( ) / and one leading + are allowed")
	ErrNotDialable = errors.New("not a dialable number: give the country code and the number, at most 15 digits (E.164), e.g. +1 415 555 0100")
)

// Parse is Normalize followed by Dialable, for a number the operator
// configures (a line, a user's number): it returns the digits, or the reason
// s is refused. A number that would be skipped as "invalid" when sent to must
// not become a line either.
func Parse(s string) (string, error) {
	n, ok := Normalize(s)
	if !ok {
		return "", ErrNotNumber
	}
	if !Dialable(n) {
		return "", ErrNotDialable
	}
	return n, nil
}
