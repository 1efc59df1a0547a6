package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"switchboard/internal/apidocs"
	"switchboard/internal/calls"
	"switchboard/internal/demo"
	"switchboard/internal/oauth"
)

// demoCalls is how many calls the demo ingests (plus the callbacks of some
// abandoned ones).
const demoCalls = 3000

// pkcePair returns a PKCE code verifier and its S256 challenge.
func pkcePair() (verifier, challenge string) {
	var b [32]byte
	rand.Read(b[:])
	verifier = base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func cmdDemo(ctx context.Context, c *cli, args []string) (err error) {
	defer func() { err = stoppedEarly(ctx, err) }()
	if err := c.parse("demo", args, c.serveFlags); err != nil {
		return err
	}
	if err := c.checkServeFlags(); err != nil {
		return err
	}
	log, flush, err := c.logger()
	if err != nil {
		return err
	}
	defer flush()
	// Always a fresh database, so the demo never touches real data.
	dir, err := os.MkdirTemp("", "switchboard-demo-")
	if err != nil {
		return err
	}
	// The demo's data is thrown away when it stops: the database and media
	// are closed first, then the directory removed. (A kill -9 cannot clean
	// up; the directory is printed at start, and lives under $TMPDIR.)
	defer func() {
		c.close()
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("could not remove the demo's temporary directory; delete it yourself", "dir", dir, "err", err)
			return
		}
		log.Info("removed the demo's temporary directory", "dir", dir)
	}()
	c.db = "sqlite://" + filepath.Join(dir, "demo.db")
	if c.media == "" {
		c.media = "file://" + filepath.ToSlash(filepath.Join(dir, "media"))
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	seed, err := demo.Seed(ctx, st)
	if err != nil {
		return fmt.Errorf("seed demo data: %w", err)
	}
	// The sim carrier's inbound door is open, so the banner's example can
	// text a line.
	if c.simSecret == "" {
		c.simSecret = rand.Text()
	}
	// The demo's own webhook receiver, on loopback: allowed for this run.
	c.webhookAllowHosts = strings.Trim(c.webhookAllowHosts+",127.0.0.1", ",")
	printTo := c.stdout
	if c.json {
		printTo = c.stderr // stdout carries one JSON object
	}
	receiver, err := startDemoReceiver(ctx, st, seed.AccountID, printTo)
	if err != nil {
		return fmt.Errorf("demo webhook receiver: %w", err)
	}
	defer receiver.close()
	callRecs, callsSeed, err := demo.BuildCalls(seed, demoCalls, time.Now())
	if err != nil {
		return fmt.Errorf("demo calls: %w", err)
	}
	return serve(ctx, c, st, log, func(a *app) {
		base := a.publicURL + "/api/public/v1"
		if c.json {
			c.print(map[string]any{"appUrl": a.publicURL + oauth.AppPath, "baseUrl": base, "key": seed.Key, "readOnlyKey": seed.ReadOnlyKey, "database": c.db, "accountId": seed.AccountID,
				"simSecret": c.simSecret}, "")
		}
		// The calls load while the server already answers (a few seconds);
		// the banner comes once they have, last, so that what the start
		// logs does not push it out of sight.
		go func() {
			began := time.Now()
			err := demo.IngestCalls(ctx, calls.New(calls.Config{Store: st, Blobs: a.media, Log: slog.New(slog.DiscardHandler)}), seed.AccountID, callRecs)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				log.Error("demo calls", "err", err)
			default:
				log.Info("demo calls loaded", "calls", len(callRecs), "duration", time.Since(began).Round(time.Millisecond))
			}
			if !c.json {
				c.print(nil, demoBanner(c, a, seed, callsSeed, receiver))
			}
			receiver.startReport()
		}()
	})
}

// demoBanner is what the demo prints once it is ready: where it is, a key,
// who to sign in as, and commands to paste.
func demoBanner(c *cli, a *app, seed demo.Result, callsSeed demo.CallsResult, receiver *demoReceiver) string {
	base := a.publicURL + "/api/public/v1"
	var b strings.Builder
	fmt.Fprintf(&b, "\nSwitchboard demo is running.\n\n")
	fmt.Fprintf(&b, "  Base URL:   %s\n", base)
	fmt.Fprintf(&b, "  API key:    %s   (every scope)\n", seed.Key)
	fmt.Fprintf(&b, "  Database:   %s (account %d; removed when the demo stops)\n\n", c.db, seed.AccountID)
	fmt.Fprintf(&b, "The app (the shared inbox, call history and webhooks in a browser):\n\n")
	fmt.Fprintf(&b, "  %s%s\n\n", a.publicURL, oauth.AppPath)
	fmt.Fprintf(&b, "  Sign in as maria / demo-password (admin: every line, call history with recordings, webhooks)\n")
	fmt.Fprintf(&b, "  or james / demo-password (front desk: the lines open to him, no call history, no webhooks); open both in two\n")
	fmt.Fprintf(&b, "  windows (one private) to see one's replies, resolves and assignments appear in the other.\n\n")
	fmt.Fprintf(&b, "Try:\n\n")
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/users\n\n", seed.Key, base)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/sms/lines\n\n", seed.Key, base)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\\n", seed.Key)
	fmt.Fprintf(&b, "       -d '{\"from\":\"%s\",\"to\":[\"+1 (212) 555-0100\"],\"message\":\"Your cleaning is tomorrow at 9:00. Reply STOP to opt out.\"}' \\\n", seed.Lines[0])
	fmt.Fprintf(&b, "       %s/sms/messages\n\n", base)
	fmt.Fprintf(&b, "  The same body, priced and checked but not sent (encoding, segments, price):\n\n")
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -d '{\"from\":\"%s\",\"to\":[\"+1 (212) 555-0100\"],\"message\":\"See you at 9 😀\"}' \\\n", seed.Key, seed.Lines[0])
	fmt.Fprintf(&b, "       %s/sms/quote\n\n", base)
	fmt.Fprintf(&b, "  Who a credential is (kind, scopes; for a person their role and lines):\n\n")
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/me\n\n", seed.Key, base)
	end := time.Now().Unix() + 3600
	fmt.Fprintf(&b, "  Call history (%d calls over the last 30 days):\n\n", callsSeed.Calls)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\\n", seed.Key)
	fmt.Fprintf(&b, "       -d '{\"start\":%d,\"end\":%d,\"limit\":5,\"filters\":{\"statuses\":[\"missed\"]}}' %s/calls/search\n\n", end-31*86400, end, base)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/calls/%s            (transferred: two legs)\n", seed.Key, base, callsSeed.Transferred)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/calls/%s/recordings  (play the url)\n", seed.Key, base, callsSeed.Recorded)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/calls/%s/transcripts\n\n", seed.Key, base, callsSeed.Recorded)
	fmt.Fprintf(&b, "  Webhooks: every SMS event (the send above, its delivery receipt) is POSTed, signed, to the\n")
	fmt.Fprintf(&b, "  demo's own receiver at %s, which counts them here (a line a second at most). See the subscription:\n\n", receiver.url)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/webhooks\n", seed.Key, base)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' '%s/webhooks/%d/deliveries?limit=5'   (each with its attemptLog)\n", seed.Key, base, receiver.id)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/webhooks/%d/deliveries/1/attempts\n", seed.Key, base, receiver.id)
	fmt.Fprintf(&b, "       (the first delivery: the receiver answered it 503 once, the retry a second later 204)\n")
	fmt.Fprintf(&b, "  curl -s -X POST -H 'Authorization: Bearer %s' %s/webhooks/%d/test   (a signed test event, now)\n\n", seed.Key, base, receiver.id)
	fmt.Fprintf(&b, "  After an outage, send again everything since a moment that did not succeed (same webhook-id),\n")
	fmt.Fprintf(&b, "  in the background, and follow the job at the Location it answers:\n\n")
	fmt.Fprintf(&b, "  curl -s -i -H 'Authorization: Bearer %s' -d '{\"since\":\"%s\"}' %s/webhooks/%d/recover\n",
		seed.Key, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), base, receiver.id)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/webhooks/%d/recover/1\n\n", seed.Key, base, receiver.id)
	fmt.Fprintf(&b, "  Live events: the same events as they happen (Server-Sent Events; keep it open in another\n")
	fmt.Fprintf(&b, "  terminal and send, resolve or assign below; reconnect with -H 'Last-Event-ID: evt_N' to resume):\n\n")
	fmt.Fprintf(&b, "  curl -N -H 'Authorization: Bearer %s' -H 'Accept: text/event-stream' %s/events\n\n", seed.Key, base)
	fmt.Fprintf(&b, "The shared inbox (%d conversations; an API key sees the team's unread state):\n\n", demo.Conversations)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' '%s/sms/conversations?unread=true&unassigned=true&limit=5'\n\n", seed.Key, base)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' '%s/sms/conversations?resolved=true&limit=5'\n\n", seed.Key, base)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' '%s/sms/unread'\n\n", seed.Key, base)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' '%s/sms/conversations/%s/%s?markRead=true'\n\n", seed.Key, base, seed.Lines[0], demo.FirstCustomer)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -X POST -d '{\"comment\":\"Booked for Tuesday\"}' \\\n", seed.Key)
	fmt.Fprintf(&b, "       %s/sms/conversations/%s/%s/resolve\n\n", base, seed.Lines[0], demo.FirstCustomer)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -X POST -d '{\"userId\":%d}' \\\n", seed.Key, seed.Users["james"].ID)
	fmt.Fprintf(&b, "       %s/sms/conversations/%s/%s/assign\n\n", base, seed.Lines[0], demo.FirstCustomer)
	fmt.Fprintf(&b, "  A customer texts the line (the sim carrier's inbound door): it arrives in the app, the event stream and\n")
	fmt.Fprintf(&b, "  the webhook receiver, raises the unread count and reopens the conversation if you resolved it:\n\n")
	fmt.Fprintf(&b, "  switchboard sim inbound --url %s --secret %s \\\n", a.publicURL, c.simSecret)
	fmt.Fprintf(&b, "       --from +%s --to +%s --text 'Running 10 minutes late, sorry!'\n\n", demo.FirstCustomer, seed.Lines[0])
	fmt.Fprintf(&b, "Carrier connections: the Hygiene line (+%s) sends through a connection of its own, %s, a simulated\n", demo.PacedLine, demo.PacedConnection)
	fmt.Fprintf(&b, "  carrier that lets one text a second leave a number. Send three at once: they wait their turn in its queue\n")
	fmt.Fprintf(&b, "  and leave a second apart, each once (each answer comes when its text has left):\n\n")
	fmt.Fprintf(&b, "  for i in 1 2 3; do curl -s -o /dev/null -w '%%{http_code}\\n' -H 'Authorization: Bearer %s' \\\n", seed.Key)
	fmt.Fprintf(&b, "       -d '{\"from\":\"%s\",\"to\":[\"+1 (212) 555-0100\"],\"message\":\"Turn '$i'\"}' %s/sms/messages & done; wait\n\n", demo.PacedLine, base)
	fmt.Fprintf(&b, "  switchboard carrier list --db %s     (its state, queue, lines; carrier kinds: SMPP, Twilio, Telnyx, Kannel)\n\n", c.db)
	fmt.Fprintf(&b, "Line resources: block a sender, save a reply, keep a draft:\n\n")
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -d '{\"number\":\"+1 415 555 0199\",\"reason\":\"spam\"}' \\\n", seed.Key)
	fmt.Fprintf(&b, "       %s/sms/lines/%s/blocked\n\n", base, seed.Lines[0])
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -d '{\"title\":\"Hours\",\"body\":\"We are open 9 to 5.\"}' %s/sms/templates\n\n", seed.Key, base)
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -X PUT -d '{\"message\":\"Thanks, we are on it\"}' %s/sms/drafts/ticket-1\n\n", seed.Key, base)
	fmt.Fprintf(&b, "Scheduled messages: priced now, sent at sendAt (here in an hour), listed soonest first, cancelled:\n\n")
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\\n", seed.Key)
	fmt.Fprintf(&b, "       -d '{\"to\":[\"+1 (212) 555-0100\"],\"message\":\"Reminder: your cleaning is at 9:00.\",\"sendAt\":\"%s\"}' \\\n",
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "       %s/sms/lines/%s/scheduled\n\n", base, seed.Lines[0])
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/sms/lines/%s/scheduled\n\n", seed.Key, base, seed.Lines[0])
	fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -X DELETE %s/sms/lines/%s/scheduled/1   (the id the POST returned)\n\n", seed.Key, base, seed.Lines[0])
	fmt.Fprintf(&b, "  Rates: US/Canada (1) sms 0.0079 mms 0.02; UK (44) sms 0.04 mms 0.1; Germany (49) sms 0.075 mms 0.15.\n")
	fmt.Fprintf(&b, "  OpenAPI: %s/openapi.json\n", base)
	fmt.Fprintf(&b, "  API reference (the same document, readable): %s%s\n\n", a.publicURL, apidocs.Path)
	verifier, challenge := pkcePair()
	authorize := a.publicURL + "/oauth/authorize?" + url.Values{
		"response_type": {"code"}, "client_id": {seed.Client.ClientID}, "redirect_uri": {seed.Client.RedirectURIs[0]},
		"scope": {"users:read sms:read sms:send messages:read messages:write sms:write"}, "state": {"demo-state"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"},
	}.Encode()
	fmt.Fprintf(&b, "OAuth: open this in a browser and sign in as maria / demo-password (or james, li, sam, raj):\n\n  %s\n\n", authorize)
	fmt.Fprintf(&b, "  After you approve, the browser goes to %s (it does not exist): copy the code from\n", seed.Client.RedirectURIs[0])
	fmt.Fprintf(&b, "  the address bar within a minute and exchange it:\n\n")
	fmt.Fprintf(&b, "  curl -s %s/api/v1/oauth/token -d grant_type=authorization_code -d code=CODE \\\n", a.publicURL)
	fmt.Fprintf(&b, "       -d code_verifier=%s -d client_id=%s \\\n", verifier, seed.Client.ClientID)
	fmt.Fprintf(&b, "       --data-urlencode redirect_uri=%s\n\n", seed.Client.RedirectURIs[0])
	// The essentials again at the end, where a terminal shows them.
	fmt.Fprintf(&b, "In short:\n\n")
	fmt.Fprintf(&b, "  API:      %s   key %s\n", base, seed.Key)
	fmt.Fprintf(&b, "  App:      %s%s   maria / demo-password (admin), james / demo-password (front desk)\n", a.publicURL, oauth.AppPath)
	fmt.Fprintf(&b, "  Docs:     %s%s\n", a.publicURL, apidocs.Path)
	fmt.Fprintf(&b, "  A text:   switchboard sim inbound --url %s --secret %s --from +%s --to +%s --text 'Hello'\n\n",
		a.publicURL, c.simSecret, demo.FirstCustomer, seed.Lines[0])
	fmt.Fprintf(&b, "Press Ctrl-C to stop.\n")
	return b.String()
}
