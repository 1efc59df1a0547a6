package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Spec keys, in the order Spec prints them.
const (
	keyReceiptDelay  = "receipt-delay"
	keyLatency       = "latency"
	keyDown          = "down"
	keyFail          = "fail"
	keyUndeliverable = "undeliverable"
)

const knownKeys = keyReceiptDelay + ", " + keyLatency + ", " + keyDown + ", " + keyFail + ", " + keyUndeliverable

// settings is a parsed spec; nil fields were not mentioned.
type settings struct {
	receiptDelay  *time.Duration
	latency       *time.Duration
	down          *bool
	fail          *[]string
	undeliverable *[]string
}

// Configure applies an operator spec such as
//
//	receipt-delay=2s,latency=0,down=false,fail=1999,1888,undeliverable=1555
//
// Keys left out keep their value. The grammar is in the package
// documentation. On error nothing changes.
func (s *Sim) Configure(spec string) error {
	st, err := parseSpec(spec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.receiptDelay != nil {
		s.receiptDelay = *st.receiptDelay
	}
	if st.latency != nil {
		s.latency = *st.latency
	}
	if st.down != nil {
		s.down = *st.down
	}
	if st.fail != nil {
		s.fail = *st.fail
	}
	if st.undeliverable != nil {
		s.undeliverable = *st.undeliverable
	}
	return nil
}

// Spec returns the current settings in the grammar Configure reads, e.g.
// "receipt-delay=2s,latency=0s,down=false,fail=1999,1888,undeliverable=".
func (s *Sim) Spec() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%s=%s,%s=%s,%s=%t,%s=%s,%s=%s",
		keyReceiptDelay, s.receiptDelay,
		keyLatency, s.latency,
		keyDown, s.down,
		keyFail, strings.Join(s.fail, ","),
		keyUndeliverable, strings.Join(s.undeliverable, ","))
}

func parseSpec(spec string) (settings, error) {
	var st settings
	seen := map[string]bool{}
	var list *[]string // the list that items without "=" extend
	var listKey string
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, isSetting := strings.Cut(item, "=")
		if !isSetting {
			if list == nil {
				return settings{}, fmt.Errorf("sim: %q is not key=value (known keys: %s)", item, knownKeys)
			}
			p, err := parsePrefix(listKey, item)
			if err != nil {
				return settings{}, err
			}
			*list = append(*list, p)
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if seen[key] {
			return settings{}, fmt.Errorf("sim: %s given twice", key)
		}
		seen[key] = true
		list = nil
		switch key {
		case keyReceiptDelay, keyLatency:
			d, err := parseDuration(key, val)
			if err != nil {
				return settings{}, err
			}
			if key == keyLatency {
				st.latency = &d
			} else {
				st.receiptDelay = &d
			}
		case keyDown:
			b, err := strconv.ParseBool(val)
			if err != nil {
				return settings{}, fmt.Errorf("sim: %s=%q: want true or false", key, val)
			}
			st.down = &b
		case keyFail, keyUndeliverable:
			prefixes := []string{}
			if val != "" {
				p, err := parsePrefix(key, val)
				if err != nil {
					return settings{}, err
				}
				prefixes = append(prefixes, p)
			}
			if key == keyFail {
				st.fail = &prefixes
			} else {
				st.undeliverable = &prefixes
			}
			list, listKey = &prefixes, key
		default:
			if key == "" {
				return settings{}, fmt.Errorf("sim: %q has no key (known keys: %s)", item, knownKeys)
			}
			return settings{}, fmt.Errorf("sim: unknown key %q (known keys: %s)", key, knownKeys)
		}
	}
	return st, nil
}

func parseDuration(key, val string) (time.Duration, error) {
	d, err := time.ParseDuration(val)
	if err != nil {
		if _, nerr := strconv.ParseFloat(val, 64); nerr == nil {
			return 0, fmt.Errorf("sim: %s=%q: a duration needs a unit, e.g. 2s or 500ms", key, val)
		}
		return 0, fmt.Errorf("sim: %s=%q: not a duration (e.g. 2s, 500ms, 0)", key, val)
	}
	if d < 0 {
		return 0, fmt.Errorf("sim: %s=%q: must not be negative", key, val)
	}
	return d, nil
}

// parsePrefix accepts digits with an optional leading "+", which it drops.
func parsePrefix(key, val string) (string, error) {
	p := strings.TrimPrefix(val, "+")
	if p == "" {
		return "", fmt.Errorf("sim: %s prefix %q: want digits", key, val)
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return "", fmt.Errorf("sim: %s prefix %q: want digits (destinations are normalized digits)", key, val)
		}
	}
	return p, nil
}
