package money

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Micros
		wantErr error
	}{
		{"0", 0, nil},
		{"0.0", 0, nil},
		{"0.000000", 0, nil},
		{"0.000001", 1, nil},
		{"0.0079", 7900, nil},
		{"0.0237", 23700, nil},
		{"0.5", 500_000, nil},
		{"1.5", 1_500_000, nil},
		{"1.50", 1_500_000, nil},
		{"12", 12_000_000, nil},
		{"10", 10_000_000, nil},
		{"123.456789", 123_456_789, nil},
		{"9223372036854.775807", math.MaxInt64, nil},
		{"9223372036854", 9_223_372_036_854_000_000, nil},

		{"9223372036854.775808", 0, ErrOverflow},
		{"9223372036855", 0, ErrOverflow},
		{"99999999999999999999", 0, ErrOverflow},
		{"18446744073709551616", 0, ErrOverflow},

		{"", 0, ErrSyntax},
		{".", 0, ErrSyntax},
		{".5", 0, ErrSyntax},
		{"1.", 0, ErrSyntax},
		{"0.0000001", 0, ErrSyntax},
		{"0.1234567", 0, ErrSyntax},
		{"1.0000000", 0, ErrSyntax},
		{"-0.5", 0, ErrSyntax},
		{"-0", 0, ErrSyntax},
		{"+1", 0, ErrSyntax},
		{"1e3", 0, ErrSyntax},
		{"1E-2", 0, ErrSyntax},
		{"1.5e0", 0, ErrSyntax},
		{"01", 0, ErrSyntax},
		{"00.5", 0, ErrSyntax},
		{"1.2.3", 0, ErrSyntax},
		{"1,5", 0, ErrSyntax},
		{" 1", 0, ErrSyntax},
		{"1 ", 0, ErrSyntax},
		{"$1", 0, ErrSyntax},
		{"0x10", 0, ErrSyntax},
		{"NaN", 0, ErrSyntax},
		{"Inf", 0, ErrSyntax},
		{"１", 0, ErrSyntax},
		{"1.٥", 0, ErrSyntax},
		{`"1"`, 0, ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Parse(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		m    Micros
		want string
	}{
		{0, "0"},
		{1, "0.000001"},
		{10, "0.00001"},
		{7900, "0.0079"},
		{23700, "0.0237"},
		{500_000, "0.5"},
		{1_000_000, "1"},
		{1_500_000, "1.5"},
		{12_000_000, "12"},
		{123_456_789, "123.456789"},
		{100_000_000, "100"},
		{math.MaxInt64, "9223372036854.775807"},
		{-1, "-0.000001"},
		{-500_000, "-0.5"},
		{-7900, "-0.0079"},
		{-12_000_000, "-12"},
		{math.MinInt64, "-9223372036854.775808"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.m.String(); got != tt.want {
				t.Errorf("Micros(%d).String() = %q, want %q", int64(tt.m), got, tt.want)
			}
			b, err := tt.m.MarshalJSON()
			if err != nil || string(b) != tt.want {
				t.Errorf("Micros(%d).MarshalJSON() = %s, %v; want %s", int64(tt.m), b, err, tt.want)
			}
		})
	}
}

func TestJSONStruct(t *testing.T) {
	type billing struct {
		UnitPrice  Micros  `json:"unitPrice"`
		TotalPrice Micros  `json:"totalPrice"`
		Refund     Micros  `json:"refund"`
		Optional   *Micros `json:"optional,omitempty"`
	}
	total, err := Micros(7900).Mul(3)
	if err != nil {
		t.Fatal(err)
	}
	in := billing{UnitPrice: 7900, TotalPrice: total, Refund: -500_000}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"unitPrice":0.0079,"totalPrice":0.0237,"refund":-0.5}`
	if string(b) != want {
		t.Fatalf("json.Marshal = %s, want %s", b, want)
	}

	var out billing
	// Refunds are written but, by Parse's rules, not read back.
	if err := json.Unmarshal([]byte(`{"unitPrice":0.0079,"totalPrice":0.0237,"optional":12}`), &out); err != nil {
		t.Fatal(err)
	}
	if out.UnitPrice != 7900 || out.TotalPrice != 23700 || out.Optional == nil || *out.Optional != 12_000_000 {
		t.Errorf("json.Unmarshal = %+v", out)
	}
}

func TestUnmarshalJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    Micros
		wantErr bool
	}{
		{`0.0079`, 7900, false},
		{`0`, 0, false},
		{`12`, 12_000_000, false},
		{`1.500000`, 1_500_000, false},
		{`null`, 42, false}, // null leaves the existing value alone
		{`"0.0079"`, 42, true},
		{`-0.5`, 42, true},
		{`1e-3`, 42, true},
		{`0.0000001`, 42, true},
		{`true`, 42, true},
		{`{}`, 42, true},
		{`9223372036855`, 42, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			m := Micros(42)
			err := m.UnmarshalJSON([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("UnmarshalJSON(%s) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if m != tt.want {
				t.Errorf("UnmarshalJSON(%s) = %d, want %d", tt.in, m, tt.want)
			}
		})
	}

	// Through encoding/json, which validates the token before handing it over.
	var v struct{ P Micros }
	if err := json.Unmarshal([]byte(`{"P": 0.0079}`), &v); err != nil || v.P != 7900 {
		t.Errorf("json.Unmarshal = %d, %v; want 7900", v.P, err)
	}
	if err := json.Unmarshal([]byte(`{"P": 1.23456789}`), &v); err == nil {
		t.Errorf("json.Unmarshal accepted 8 fraction digits")
	}
	err := json.Unmarshal([]byte(`{"P": `+strings.Repeat("9", 100)+`}`), &v)
	if !errors.Is(err, ErrOverflow) {
		t.Errorf("json.Unmarshal of huge number error = %v, want ErrOverflow", err)
	}
	if len(err.Error()) > 200 {
		t.Errorf("error echoes too much input: %d bytes", len(err.Error()))
	}
}

func TestMul(t *testing.T) {
	tests := []struct {
		m       Micros
		n       int
		want    Micros
		wantErr bool
	}{
		{7900, 3, 23700, false},
		{7900, 0, 0, false},
		{0, 5, 0, false},
		{7900, 1, 7900, false},
		{7900, -2, -15800, false},
		{-500_000, 2, -1_000_000, false},
		{1, math.MaxInt64, math.MaxInt64, false},
		{math.MaxInt64, 1, math.MaxInt64, false},
		{math.MinInt64, 1, math.MinInt64, false},
		{-1, math.MaxInt64, -math.MaxInt64, false},
		{math.MaxInt64, 2, 0, true},
		{math.MaxInt64/2 + 1, 2, 0, true},
		{math.MaxInt64 / 2, 2, math.MaxInt64 - 1, false},
		{math.MinInt64, -1, 0, true},
		{-1, math.MinInt64, 0, true},
		{math.MinInt64, 2, 0, true},
		{1 << 32, 1 << 30, 1 << 62, false},
		{1 << 32, 1 << 31, 0, true}, // exactly 2^63
		{1 << 32, 1 << 32, 0, true},
	}
	for _, tt := range tests {
		got, err := tt.m.Mul(tt.n)
		if (err != nil) != tt.wantErr {
			t.Errorf("Micros(%d).Mul(%d) error = %v, wantErr %v", int64(tt.m), tt.n, err, tt.wantErr)
			continue
		}
		if tt.wantErr && !errors.Is(err, ErrOverflow) {
			t.Errorf("Micros(%d).Mul(%d) error = %v, want ErrOverflow", int64(tt.m), tt.n, err)
		}
		if got != tt.want {
			t.Errorf("Micros(%d).Mul(%d) = %d, want %d", int64(tt.m), tt.n, got, tt.want)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	for _, v := range []int64{0, 1, 7900, 500_000, 12_000_000, math.MaxInt64, -1, -500_000, math.MinInt64} {
		f.Add(v, "0.0079")
	}
	f.Add(int64(0), "1.50")
	f.Add(int64(0), "1e3")
	f.Fuzz(func(t *testing.T, v int64, s string) {
		m := Micros(v)
		text := m.String()
		j, err := json.Marshal(m)
		if err != nil || string(j) != text {
			t.Fatalf("json.Marshal(%d) = %s, %v; want %s", v, j, err, text)
		}
		if m >= 0 {
			if got, err := Parse(text); err != nil || got != m {
				t.Fatalf("Parse(%q) = %d, %v; want %d", text, got, err, v)
			}
			var back Micros
			if err := json.Unmarshal(j, &back); err != nil || back != m {
				t.Fatalf("json.Unmarshal(%s) = %d, %v; want %d", j, back, err, v)
			}
		} else if _, err := Parse(text); err == nil {
			t.Fatalf("Parse(%q) accepted a negative amount", text)
		}

		// Whatever Parse accepts must survive String and come back equal,
		// and encoding/json must agree with Parse about it.
		p, err := Parse(s)
		if err != nil {
			return
		}
		if p < 0 {
			t.Fatalf("Parse(%q) = %d, negative", s, p)
		}
		if again, err := Parse(p.String()); err != nil || again != p {
			t.Fatalf("Parse(%q) = %d, but Parse(%q) = %d, %v", s, p, p.String(), again, err)
		}
		var viaJSON Micros
		if err := json.Unmarshal([]byte(s), &viaJSON); err != nil || viaJSON != p {
			t.Fatalf("json.Unmarshal(%s) = %d, %v; Parse gave %d", s, viaJSON, err, p)
		}
	})
}

func BenchmarkString(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Micros(123_456_789).String()
	}
}
