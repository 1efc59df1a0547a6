package carriers

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"switchboard/internal/carrier/telnyx"
	"switchboard/internal/carrier/twilio"
	"switchboard/internal/domain"
)

// Setting is one setting a kind of connection takes, given as the flag
// --Name.
type Setting struct {
	Name     string
	Secret   bool // kept apart and never printed back (shown as set / not set)
	Required bool
	Help     string
}

// Kinds are the kinds of connection this server runs, with their settings.
var Kinds = map[string][]Setting{
	// A simulated carrier, with the limits, to try the queue offline.
	"sim": {throughputSetting, numberThroughputSetting},
	"kannel": {
		{Name: "send-url", Required: true, Help: "smsbox's sendsms URL, e.g. http://127.0.0.1:13013/cgi-bin/sendsms"},
		{Name: "user", Required: true, Help: "a sendsms-user's username"},
		{Name: "password", Secret: true, Required: true, Help: "that user's password"},
		{Name: "secret", Secret: true, Required: true, Help: "the shared secret of Kannel's dlr-url and get-url (16 or more of A-Z a-z 0-9 - . _ ~)"},
		{Name: "smsc", Help: "an smsc-id to send through (sendsms's smsc parameter)"},
	},
	"twilio": {
		{Name: "account-sid", Required: true, Help: "the Twilio account's SID (AC…)"},
		{Name: "auth-token", Secret: true, Required: true, Help: "its auth token: the API's password and the callbacks' signing key"},
		{Name: "messaging-service-sid", Help: "a messaging service to send through (MG…), instead of the line's number"},
		{Name: "api-base", Help: "the API's base URL, for a Twilio-compatible provider (default https://api.twilio.com)"},
		throughputSetting, numberThroughputSetting,
	},
	"telnyx": {
		{Name: "api-key", Secret: true, Required: true, Help: "a Telnyx API key (v2)"},
		{Name: "public-key", Required: true, Help: "the account's public key (base64), to verify the webhooks' Ed25519 signatures"},
		{Name: "messaging-profile-id", Help: "a messaging profile to send with"},
		{Name: "api-base", Help: "the API's base URL (default https://api.telnyx.com)"},
		throughputSetting, numberThroughputSetting,
	},
	"smpp": {
		{Name: "address", Required: true, Help: "the SMSC's host:port, or several comma-separated, tried in order on reconnect"},
		{Name: "system-id", Required: true, Help: "the bind's system_id (at most 15 characters)"},
		{Name: "password", Secret: true, Required: true, Help: "the bind's password (at most 8 characters)"},
		{Name: "system-type", Help: "the bind's system_type, when the SMSC asks for one"},
		{Name: "tls", Help: "true: connect with TLS"},
		{Name: "binds", Help: "binds the whole cluster holds at most, each on the first node to take it (default 1)"},
		{Name: "window", Help: "unanswered submit_sm per bind (default 10)"},
		throughputSetting, numberThroughputSetting,
		{Name: "source-ton", Help: "source address type of number (default: 1 for an E.164 number, 3 for a short code)"},
		{Name: "source-npi", Help: "source address numbering plan (default: 1 for an E.164 number, 0 for a short code)"},
		{Name: "dest-ton", Help: "destination address type of number (default as for the source)"},
		{Name: "dest-npi", Help: "destination address numbering plan (default as for the source)"},
	},
}

// The limits every kind that sends through a provider takes: messages
// over them wait their turn in the connection's durable queue.
var (
	throughputSetting       = Setting{Name: "throughput", Help: "messages a second through the connection, across every node; 0 for no limit (default 0)"}
	numberThroughputSetting = Setting{Name: "number-throughput", Help: "messages a second from one number, such as 1 for an unregistered long code or 0.5; 0 for no limit (default 0)"}
)

// KindNames are the kinds, sorted.
func KindNames() []string {
	var out []string
	for k := range Kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// CheckName checks a connection's name: it is also a path segment of its
// callback URLs (/carrier/NAME/…), so 1 to 32 of a-z 0-9 and "-", and not
// one of the server-wide gateway's own paths.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return domain.Errorf(domain.Invalid, "a connection's name is 1 to 32 characters of a-z, 0-9 and -, starting with a letter or digit: %q is not", name)
	}
	if name == "sim" || name == "kannel" {
		return domain.Errorf(domain.Invalid, "%q is the server-wide gateway's own path (/carrier/%s); choose another name", name, name)
	}
	return nil
}

// Apply checks kind and sets the given settings (flag name → value, only
// those the person gave) on settings and secrets, returning what is
// missing or wrong. An empty value removes an optional setting.
func Apply(kind string, given map[string]string, settings, secrets map[string]string) error {
	spec, ok := Kinds[kind]
	if !ok {
		return domain.Errorf(domain.Invalid, "unknown kind %q (want one of %s)", kind, strings.Join(KindNames(), ", "))
	}
	var names []string
	for k := range given {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		i := slices.IndexFunc(spec, func(s Setting) bool { return s.Name == name })
		if i < 0 {
			return domain.Errorf(domain.Invalid, "%s connection takes no --%s", withArticle(kind), name)
		}
		target := settings
		if spec[i].Secret {
			target = secrets
		}
		if v := given[name]; v == "" {
			delete(target, name)
		} else {
			target[name] = v
		}
	}
	var missing []string
	for _, s := range spec {
		v := settings[s.Name]
		if s.Secret {
			v = secrets[s.Name]
		}
		if s.Required && v == "" {
			missing = append(missing, "--"+s.Name)
		}
	}
	if len(missing) > 0 {
		return domain.Errorf(domain.Invalid, "%s connection needs %s", withArticle(kind), strings.Join(missing, ", "))
	}
	if kind == "smpp" {
		if _, err := smppConfig(settings, secrets); err != nil {
			return domain.Errorf(domain.Invalid, "%v", err)
		}
	}
	if kind == "twilio" {
		if _, err := twilio.New(twilio.Config{AccountSID: settings["account-sid"], AuthToken: secrets["auth-token"],
			MessagingServiceSID: settings["messaging-service-sid"], APIBase: settings["api-base"]}); err != nil {
			return domain.Errorf(domain.Invalid, "%v", err)
		}
	}
	if kind == "twilio" || kind == "telnyx" || kind == "sim" {
		if _, err := limitsOf(settings, false); err != nil {
			return domain.Errorf(domain.Invalid, "%v", err)
		}
	}
	if kind == "telnyx" {
		if _, err := telnyx.ParsePublicKey(settings["public-key"]); err != nil {
			return domain.Errorf(domain.Invalid, "--public-key: %v", err)
		}
	}
	if kind == "kannel" {
		if u, err := url.Parse(settings["send-url"]); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return domain.Errorf(domain.Invalid, "--send-url: %q is not an http(s) URL", settings["send-url"])
		}
	}
	return nil
}

// settingsFlag is the help line of a setting.
func (s Setting) String() string {
	h := s.Help
	if s.Secret {
		h += " (secret: never printed back)"
	}
	if s.Required {
		h += " (required)"
	}
	return fmt.Sprintf("--%s: %s", s.Name, h)
}

// withArticle is "a kannel", "an smpp": as the kind's name is read aloud.
func withArticle(kind string) string {
	if kind == "smpp" {
		return "an " + kind
	}
	return "a " + kind
}
