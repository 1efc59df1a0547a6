package money

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Micros is an amount in millionths of a US dollar.
type Micros int64

// perDollar is the number of Micros in one dollar, so an amount has at most
// six fraction digits.
const (
	perDollar = 1_000_000
	fracLen   = 6
)

var (
	// ErrSyntax reports text that is not a plain non-negative decimal.
	ErrSyntax = errors.New("money: invalid amount")
	// ErrOverflow reports an amount or product that does not fit in Micros.
	ErrOverflow = errors.New("money: amount out of range")
)

// Parse reads a plain non-negative decimal such as "0", "0.0079" or "12".
//
// The grammar is the JSON number grammar without sign or exponent and with at
// most six fraction digits, so exactly the amounts String can produce (plus
// harmless trailing fraction zeros) are accepted. Anything that would need
// rounding is an error rather than silently approximated.
func Parse(s string) (Micros, error) {
	m, err := parse(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", err, s)
	}
	return m, nil
}

func parse(s string) (Micros, error) {
	intPart, frac, hasDot := s, "", false
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			intPart, frac, hasDot = s[:i], s[i+1:], true
			break
		}
	}
	// JSON forbids leading zeros and bare dots; matching it keeps Parse and
	// UnmarshalJSON agreeing on one notion of a valid amount.
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
		return 0, ErrSyntax
	}
	if hasDot && (frac == "" || len(frac) > fracLen) {
		return 0, ErrSyntax
	}
	var whole int64
	for i := 0; i < len(intPart); i++ {
		d := int64(intPart[i]) - '0'
		if d < 0 || d > 9 {
			return 0, ErrSyntax
		}
		if whole > (math.MaxInt64-d)/10 {
			return 0, ErrOverflow
		}
		whole = whole*10 + d
	}
	var f int64
	for i := 0; i < fracLen; i++ {
		f *= 10
		if i < len(frac) {
			d := int64(frac[i]) - '0'
			if d < 0 || d > 9 {
				return 0, ErrSyntax
			}
			f += d
		}
	}
	if whole > (math.MaxInt64-f)/perDollar {
		return 0, ErrOverflow
	}
	return Micros(whole*perDollar + f), nil
}

// String formats m as the shortest exact decimal, e.g. "0.0079" or "-0.5".
func (m Micros) String() string {
	var buf [24]byte // "-9223372036854.775808" is 21 bytes
	return string(m.appendDecimal(buf[:0]))
}

// appendDecimal is the allocation-free core of String and MarshalJSON.
func (m Micros) appendDecimal(b []byte) []byte {
	// Work on the magnitude as uint64 so math.MinInt64 (a negative with no
	// positive counterpart) still formats correctly.
	u := uint64(m)
	if m < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/perDollar, 10)
	f := u % perDollar
	if f == 0 {
		return b
	}
	var digits [fracLen]byte
	for i := fracLen - 1; i >= 0; i-- {
		digits[i] = byte('0' + f%10)
		f /= 10
	}
	n := fracLen
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// AppendJSON appends m as MarshalJSON writes it, for encoders that append
// JSON without reflection.
func (m Micros) AppendJSON(b []byte) []byte { return m.appendDecimal(b) }

// MarshalJSON writes m as a bare JSON number with the same text as String.
func (m Micros) MarshalJSON() ([]byte, error) {
	return m.appendDecimal(make([]byte, 0, 24)), nil
}

// UnmarshalJSON reads a JSON number token exactly, with Parse's rules, so no
// amount ever passes through float64. JSON null leaves m unchanged, as the
// encoding/json convention for null is.
func (m *Micros) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	v, err := parse(string(data))
	if err != nil {
		return fmt.Errorf("%w: JSON value %s", err, truncate(data))
	}
	*m = v
	return nil
}

// truncate bounds how much of a hostile request body ends up in an error.
func truncate(data []byte) string {
	const limit = 40
	if len(data) > limit {
		return string(data[:limit]) + "…"
	}
	return string(data)
}

// Mul returns m × n, or ErrOverflow if the product does not fit.
func (m Micros) Mul(n int) (Micros, error) {
	a, b := int64(m), int64(n)
	if a == 0 || b == 0 {
		return 0, nil
	}
	p := a * b
	// Division undoes the multiplication unless it wrapped. The one wrap
	// division cannot see is MinInt64 × -1, which wraps back to MinInt64.
	if p/b != a || (a == math.MinInt64 && b == -1) {
		return 0, fmt.Errorf("%w: %s × %d", ErrOverflow, m, n)
	}
	return Micros(p), nil
}
