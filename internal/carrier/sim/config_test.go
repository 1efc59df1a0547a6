package sim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/carrier"
)

// state is what Configure can change, read back under the lock.
type state struct {
	receiptDelay, latency time.Duration
	down                  bool
	fail, undeliverable   []string
}

func stateOf(s *Sim) state {
	s.mu.Lock()
	defer s.mu.Unlock()
	return state{s.receiptDelay, s.latency, s.down, slices.Clone(s.fail), slices.Clone(s.undeliverable)}
}

func (a state) equal(b state) bool {
	return a.receiptDelay == b.receiptDelay && a.latency == b.latency && a.down == b.down &&
		slices.Equal(a.fail, b.fail) && slices.Equal(a.undeliverable, b.undeliverable)
}

func TestConfigureGood(t *testing.T) {
	start := state{receiptDelay: 2 * time.Second, latency: 5 * time.Millisecond, down: true,
		fail: []string{"1777"}, undeliverable: []string{"1666"}}
	tests := []struct {
		spec string
		want state
	}{
		{"receipt-delay=2s,latency=0,down=false,fail=1999,1888,undeliverable=1555",
			state{2 * time.Second, 0, false, []string{"1999", "1888"}, []string{"1555"}}},
		{"", start},
		{"  ", start},
		{"down=false", state{2 * time.Second, 5 * time.Millisecond, false, []string{"1777"}, []string{"1666"}}},
		{"fail=", state{2 * time.Second, 5 * time.Millisecond, true, []string{}, []string{"1666"}}},
		{"fail=,undeliverable=", state{2 * time.Second, 5 * time.Millisecond, true, []string{}, []string{}}},
		{"undeliverable=1555,1444,latency=250ms", state{2 * time.Second, 250 * time.Millisecond, true, []string{"1777"}, []string{"1555", "1444"}}},
		{" Receipt-Delay = 500ms , DOWN = 1 , fail = +44 , 1999 ,", state{500 * time.Millisecond, 5 * time.Millisecond, true, []string{"44", "1999"}, []string{"1666"}}},
		{"receipt-delay=0s,latency=1m30s", state{0, 90 * time.Second, true, []string{"1777"}, []string{"1666"}}},
	}
	for _, tt := range tests {
		s := New(Config{ReceiptDelay: start.receiptDelay, Latency: start.latency})
		s.SetDown(start.down)
		s.FailDestinations(start.fail...)
		s.UndeliverableDestinations(start.undeliverable...)
		if err := s.Configure(tt.spec); err != nil {
			t.Errorf("Configure(%q): %v", tt.spec, err)
			continue
		}
		if got := stateOf(s); !got.equal(tt.want) {
			t.Errorf("Configure(%q) = %+v, want %+v", tt.spec, got, tt.want)
		}
		s.Close()
	}
}

func TestConfigureBad(t *testing.T) {
	tests := []struct{ spec, wantErr string }{
		{"bogus=1", `unknown key "bogus"`},
		{"receipt-delay=2s,colour=red", `unknown key "colour"`},
		{"receipt-delay=2", `a duration needs a unit`},
		{"latency=soon", `latency="soon": not a duration`},
		{"latency=-1s", `must not be negative`},
		{"down=maybe", `down="maybe": want true or false`},
		{"down=", `want true or false`},
		{"fail=19x9", `fail prefix "19x9": want digits`},
		{"undeliverable=1555,abc", `undeliverable prefix "abc": want digits`},
		{"fail=+", `fail prefix "+": want digits`},
		{"1999", `"1999" is not key=value`},
		{"down=true,1999", `"1999" is not key=value`},
		{"=5", `has no key`},
		{"down=true,down=false", `down given twice`},
		{"fail=1,undeliverable=2,fail=3", `fail given twice`},
	}
	for _, tt := range tests {
		s := New(DefaultConfig())
		s.FailDestinations("1777")
		before := stateOf(s)
		err := s.Configure(tt.spec)
		if err == nil {
			t.Errorf("Configure(%q): no error, want %q", tt.spec, tt.wantErr)
		} else {
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Configure(%q) = %q, want it to contain %q", tt.spec, err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "sim: ") {
				t.Errorf("Configure(%q) = %q, want a sim: prefix", tt.spec, err)
			}
		}
		if after := stateOf(s); !after.equal(before) {
			t.Errorf("Configure(%q) failed but changed the Sim: %+v, was %+v", tt.spec, after, before)
		}
		s.Close()
	}
}

func TestSpecRoundTrips(t *testing.T) {
	s := New(Config{ReceiptDelay: 1500 * time.Millisecond, Latency: 3 * time.Millisecond})
	defer s.Close()
	s.SetDown(true)
	s.FailDestinations("1999", "1888")
	want := "receipt-delay=1.5s,latency=3ms,down=true,fail=1999,1888,undeliverable="
	if got := s.Spec(); got != want {
		t.Errorf("Spec = %q, want %q", got, want)
	}
	before := stateOf(s)
	t2 := New(Config{})
	defer t2.Close()
	if err := t2.Configure(s.Spec()); err != nil {
		t.Fatal(err)
	}
	if after := stateOf(t2); !after.equal(before) {
		t.Errorf("round trip = %+v, want %+v", after, before)
	}
}

func TestConfigureTakesEffect(t *testing.T) {
	s, sink := newSim(t, DefaultConfig())
	if err := s.Configure("receipt-delay=0,fail=1999,undeliverable=1555"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(context.Background(), msg(1, "19990000000")); !errors.Is(err, carrier.ErrUnavailable) {
		t.Errorf("fail prefix: err = %v", err)
	}
	if _, err := s.Send(context.Background(), msg(2, "15550000000")); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, sink.receipts, "receipt"); r.Status != StatusUndelivered {
		t.Errorf("receipt = %+v, want undelivered", r)
	}
	if err := s.Configure("down=true"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(context.Background(), msg(3, "12120000000")); !errors.Is(err, carrier.ErrUnavailable) {
		t.Errorf("down: err = %v", err)
	}
}
