package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"switchboard/internal/apitest"
)

// simConversation is what the inbox lists for one pair.
type simConversation struct {
	Line        string `json:"line"`
	Number      string `json:"number"`
	LastMessage string `json:"lastMessage"`
	UnreadCount int    `json:"unreadCount"`
	Resolved    bool   `json:"resolved"`
}

// TestSimInbound: "switchboard sim inbound" texts a line of a running server
// through the sim carrier's inbound door, and the text takes a real
// carrier's path: a resolved conversation reopens and its unread count
// rises. A wrong secret is refused and stores nothing.
func TestSimInbound(t *testing.T) {
	engines(t, func(t *testing.T, db string) {
		const secret = "sim-door-secret-0123456789"
		account := createAccount(t, db, "Sim Dental")
		line := createLine(t, db, account, "--number", "+1 415 555 0100", "--name", "Front desk")
		key := createKey(t, db, account, "inbox", "all")
		base := startServer(t, db, "--sim-secret", secret)
		const customer = "14155552000"
		texts := func(secret, text string) (stdout, stderr string, exit int) {
			return run(t, "sim", "inbound", "--url", base, "--secret", secret, "--from", "+1 (415) 555-2000", "--to", "+"+line.Number, "--text", text)
		}
		conversation := func() simConversation {
			list := getData[[]simConversation](t, base+apiPrefix+"/sms/conversations?limit=10", key.Key)
			for _, c := range list {
				if c.Line == line.Number && c.Number == customer {
					return c
				}
			}
			t.Fatalf("the inbox has no conversation %s/%s: %+v", line.Number, customer, list)
			return simConversation{}
		}

		if out, stderr, exit := texts(secret, "Can I move my cleaning to Friday?"); exit != 0 || !strings.Contains(out, "handed to the sim carrier") {
			t.Fatalf("sim inbound: exit %d, stdout %q, stderr %q; want exit 0", exit, out, stderr)
		}
		if c := conversation(); c.UnreadCount != 1 || c.LastMessage != "Can I move my cleaning to Friday?" || c.Resolved {
			t.Fatalf("after the first text: %+v; want it unread once, open", c)
		}

		// Resolved through the API, then texted again: reopened, two unread.
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s%s/sms/conversations/%s/%s/resolve", base, apiPrefix, line.Number, customer), nil)
		req.Header.Set("Authorization", "Bearer "+key.Key)
		resp, err := apitest.Client(t).Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("resolve: %v %v", resp, err)
		}
		resp.Body.Close()
		if c := conversation(); !c.Resolved {
			t.Fatalf("after resolve: %+v; want resolved", c)
		}
		if _, stderr, exit := texts(secret, "Friday 10am works, thanks"); exit != 0 {
			t.Fatalf("sim inbound: exit %d, stderr %q", exit, stderr)
		}
		if c := conversation(); c.Resolved || c.UnreadCount != 2 || c.LastMessage != "Friday 10am works, thanks" {
			t.Fatalf("after the second text: %+v; want it reopened with 2 unread", c)
		}

		// A wrong secret: refused, exit 1, nothing stored.
		_, stderr, exit := texts("not-the-sim-door-secret", "should not arrive")
		if exit != 1 || !strings.Contains(stderr, "refused the secret") {
			t.Errorf("sim inbound with a wrong secret: exit %d, stderr %q; want exit 1 saying the secret was refused", exit, stderr)
		}
		if c := conversation(); c.UnreadCount != 2 || c.LastMessage != "Friday 10am works, thanks" {
			t.Errorf("after a refused text: %+v; want it unchanged", c)
		}
	})
}

// TestSimInboundDoorClosed: without --sim-secret the server has no inbound
// door, and the command says so.
func TestSimInboundDoorClosed(t *testing.T) {
	db := t.TempDir() + "/sb.db"
	base := startServer(t, db)
	_, stderr, exit := run(t, "sim", "inbound", "--url", base, "--secret", "sim-door-secret-0123456789", "--from", "+14155552000", "--to", "+14155550100", "--text", "hi")
	if exit != 1 || !strings.Contains(stderr, "has no sim inbound door") {
		t.Errorf("sim inbound to a server without --sim-secret: exit %d, stderr %q; want exit 1 saying the door is closed", exit, stderr)
	}
	_, stderr, exit = run(t, "serve", "--db", db, "--sim-secret", "short")
	if exit != 2 || !strings.Contains(stderr, "--sim-secret: want at least 16 characters") {
		t.Errorf("serve --sim-secret short: exit %d, stderr %q; want exit 2", exit, stderr)
	}
}

// TestDemoSimInboundExample runs the demo's printed "switchboard sim
// inbound" example as pasted: the text lands in the first conversation.
func TestDemoSimInboundExample(t *testing.T) {
	t.Parallel()
	p := start(t, childEnv("TMPDIR="+t.TempDir()), "demo", "--listen", "127.0.0.1:0")
	p.startWithin = demoStartTimeout
	keyLine := p.waitLine(p.stdout, "the API key", func(l string) bool { return strings.HasPrefix(l, "  API key:") })
	baseLine := p.waitLine(p.stdout, "the base URL", func(l string) bool { return strings.HasPrefix(l, "  Base URL:") })
	first := p.waitLine(p.stdout, "the sim inbound example", func(l string) bool { return strings.HasPrefix(l, "  switchboard sim inbound ") })
	second := p.waitLine(p.stdout, "its second line", func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "--from ") })
	args := shellWords(t, strings.TrimSuffix(strings.TrimSpace(first), `\`)+" "+strings.TrimSpace(second))
	if out, stderr, exit := run(t, args[1:]...); exit != 0 {
		t.Fatalf("the demo's example %q: exit %d, stdout %q, stderr %q", args, exit, out, stderr)
	}
	key := strings.Fields(strings.TrimPrefix(keyLine, "  API key:"))[0]
	base := strings.TrimSpace(strings.TrimPrefix(baseLine, "  Base URL:"))
	var from, to, text string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--from":
			from = strings.TrimPrefix(args[i+1], "+")
		case "--to":
			to = strings.TrimPrefix(args[i+1], "+")
		case "--text":
			text = args[i+1]
		}
	}
	list := getData[[]simConversation](t, base+"/sms/conversations?limit=200&lines="+to, key)
	for _, c := range list {
		if c.Number == from {
			if c.LastMessage != text || c.UnreadCount == 0 {
				t.Errorf("after the demo's example: %+v; want its text last and unread", c)
			}
			return
		}
	}
	t.Errorf("after the demo's example: no conversation with %s on %s", from, to)
}

// shellWords splits a command line as a shell would, for the quoting the
// demo's examples use: spaces between words, single quotes around one.
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
			}
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
