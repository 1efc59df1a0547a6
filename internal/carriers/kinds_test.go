package carriers

import (
	"strings"
	"testing"
	"time"
)

func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{"k1": true, "twilio-us": true, "a": true, "": false, "-x": false, "Upper": false,
		"has space": false, "a/b": false, strings.Repeat("x", 33): false, "sim": false, "kannel": false} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok %t", name, err, ok)
		}
	}
}

// TestApply: settings go to settings or secrets by kind, a setting the kind
// does not take and a missing required one are refused, an empty value
// removes an optional one, and a changed connection keeps what was not
// given.
func TestApply(t *testing.T) {
	settings, secrets := map[string]string{}, map[string]string{}
	full := map[string]string{"send-url": "http://127.0.0.1:13013/cgi-bin/sendsms", "user": "u", "password": "p", "secret": "0123456789abcdefg", "smsc": "x"}
	if err := Apply("kannel", full, settings, secrets); err != nil {
		t.Fatal(err)
	}
	if settings["user"] != "u" || secrets["password"] != "p" || secrets["secret"] == "" || settings["password"] != "" || settings["smsc"] != "x" {
		t.Fatalf("settings %v, secrets %v", settings, secrets)
	}
	if err := Apply("kannel", map[string]string{"smsc": ""}, settings, secrets); err != nil || settings["smsc"] != "" || settings["user"] != "u" {
		t.Errorf("removing smsc: %v, %v", err, settings)
	}
	for _, tc := range []struct {
		kind  string
		given map[string]string
		want  string
	}{
		{"carrier-pigeon", nil, "unknown kind"},
		{"kannel", map[string]string{"user": "u"}, "needs --send-url, --password, --secret"},
		{"sim", map[string]string{"user": "u"}, "takes no --user"},
		{"kannel", map[string]string{"send-url": "ftp://x", "user": "u", "password": "p", "secret": "s"}, "not an http(s) URL"},
	} {
		err := Apply(tc.kind, tc.given, map[string]string{}, map[string]string{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Apply(%s, %v) = %v, want %q", tc.kind, tc.given, err, tc.want)
		}
	}
}

func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		settings map[string]string
		binds    bool
		want     limits
		err      string
	}{
		{map[string]string{}, true, limits{binds: 1}, ""},
		{map[string]string{"binds": "3", "throughput": "100"}, true, limits{binds: 3, throughput: 100}, ""},
		{map[string]string{"binds": "3"}, false, limits{binds: 1}, ""}, // an HTTP kind has one sender
		{map[string]string{"number-throughput": "1"}, false, limits{binds: 1, numberStep: time.Second}, ""},
		{map[string]string{"number-throughput": "0.5"}, false, limits{binds: 1, numberStep: 2 * time.Second}, ""},
		{map[string]string{"number-throughput": "0.125"}, false, limits{binds: 1, numberStep: 8 * time.Second}, ""},
		{map[string]string{"number-throughput": "0"}, false, limits{binds: 1}, ""},
		{map[string]string{"number-throughput": "0.0001"}, false, limits{}, "--number-throughput"},
		{map[string]string{"number-throughput": "-1"}, false, limits{}, "--number-throughput"},
		{map[string]string{"number-throughput": "1e3"}, false, limits{}, "--number-throughput"},
		{map[string]string{"number-throughput": "2000"}, false, limits{}, "--number-throughput"},
		{map[string]string{"throughput": "-1"}, false, limits{}, "--throughput"},
		{map[string]string{"binds": "0"}, true, limits{}, "--binds"},
		{map[string]string{"binds": "65"}, true, limits{}, "--binds"},
	} {
		got, err := limitsOf(tc.settings, tc.binds)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("limitsOf(%v) = %+v, %v; want an error naming %s", tc.settings, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("limitsOf(%v) = %+v, %v; want %+v", tc.settings, got, err, tc.want)
		}
	}
	// Apply checks them for every kind that takes them.
	settings, secrets := map[string]string{}, map[string]string{}
	err := Apply("twilio", map[string]string{"account-sid": "AC0123456789abcdef0123456789abcdef", "auth-token": "x", "number-throughput": "fast"}, settings, secrets)
	if err == nil || !strings.Contains(err.Error(), "--number-throughput") {
		t.Errorf("a twilio connection with --number-throughput fast: %v", err)
	}
}
