package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// cmdSimInbound texts one of a running server's lines through its sim
// carrier's inbound door (serve --sim-secret; the demo opens it): the text
// then takes the path a real carrier's takes, so the event stream, webhooks,
// unread counts, opt-out keywords and reopening all show it.
func cmdSimInbound(ctx context.Context, c *cli, args []string) error {
	var base, secret, from, to, text string
	if err := c.parseFlags("sim inbound", args, func(fs *flag.FlagSet) {
		fs.StringVar(&base, "url", env("URL", "http://127.0.0.1:8080"), "the server's base URL, as serve logs it (SWITCHBOARD_URL)")
		fs.StringVar(&secret, "secret", env("SIM_SECRET", ""), "the server's --sim-secret; the demo prints its own (SWITCHBOARD_SIM_SECRET)")
		fs.StringVar(&from, "from", "", "the sender's number, e.g. \"+1 (212) 555-0100\" (required)")
		fs.StringVar(&to, "to", "", "the line's number (required)")
		fs.StringVar(&text, "text", "", "the text (required)")
	}); err != nil {
		return err
	}
	if from == "" || to == "" || text == "" || secret == "" {
		return usageError{"--from, --to, --text and --secret (or SWITCHBOARD_SIM_SECRET) are required"}
	}
	door := strings.TrimRight(base, "/") + "/carrier/sim/inbound"
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	form := url.Values{"from": {from}, "to": {to}, "text": {text}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, door, strings.NewReader(form.Encode()))
	if err != nil {
		return usageError{fmt.Sprintf("--url %q: %v", base, err)}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the server at %s: %w", base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	switch resp.StatusCode {
	case http.StatusNoContent:
	case http.StatusUnauthorized:
		return fmt.Errorf("the server refused the secret: give its --sim-secret")
	case http.StatusNotFound:
		return fmt.Errorf("%s has no sim inbound door: it must run the sim carrier with --sim-secret", base)
	default:
		return fmt.Errorf("the server answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	c.print(map[string]any{"from": from, "to": to, "accepted": true},
		fmt.Sprintf("text from %s to %s handed to the sim carrier (a number that is not an SMS line is dropped, as a carrier's would be: see the server's log)", from, to))
	return nil
}
