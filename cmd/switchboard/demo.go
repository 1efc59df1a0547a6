package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"switchboard/internal/demo"
)

func cmdDemo(ctx context.Context, c *cli, args []string) error {
	if err := c.parse("demo", args, c.serveFlags); err != nil {
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
	c.db = "sqlite://" + filepath.Join(dir, "demo.db")
	if c.media == "" {
		c.media = "file://" + filepath.ToSlash(filepath.Join(dir, "media"))
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	seed, err := demo.Seed(ctx, st)
	if err != nil {
		return fmt.Errorf("seed demo data: %w", err)
	}
	return serve(ctx, c, st, log, func(a *app) {
		base := a.publicURL + "/api/public/v1"
		if c.json {
			c.print(map[string]any{"baseUrl": base, "key": seed.Key, "readOnlyKey": seed.ReadOnlyKey, "database": c.db, "accountId": seed.AccountID}, "")
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "\nSwitchboard demo is running.\n\n")
		fmt.Fprintf(&b, "  Base URL:   %s\n", base)
		fmt.Fprintf(&b, "  API key:    %s   (every scope)\n", seed.Key)
		fmt.Fprintf(&b, "  Database:   %s (account %d)\n\n", c.db, seed.AccountID)
		fmt.Fprintf(&b, "Try:\n\n")
		fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/users\n\n", seed.Key, base)
		fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' %s/sms/lines\n\n", seed.Key, base)
		fmt.Fprintf(&b, "  curl -s -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\\n", seed.Key)
		fmt.Fprintf(&b, "       -d '{\"from\":\"%s\",\"to\":[\"+1 (212) 555-0100\"],\"message\":\"Your cleaning is tomorrow at 9:00. Reply STOP to opt out.\"}' \\\n", seed.Lines[0])
		fmt.Fprintf(&b, "       %s/sms/messages\n\n", base)
		fmt.Fprintf(&b, "  Rates: US/Canada (1) sms 0.0079 mms 0.02; UK (44) sms 0.04 mms 0.1; Germany (49) sms 0.075 mms 0.15.\n")
		fmt.Fprintf(&b, "  OpenAPI: %s/openapi.json\n\n", base)
		fmt.Fprintf(&b, "Press Ctrl-C to stop.\n")
		c.print(nil, b.String())
	})
}
