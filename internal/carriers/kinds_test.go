package carriers

import (
	"strings"
	"testing"
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
