package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/store"
)

func cmdOAuthAllowHost(ctx context.Context, c *cli, args []string) error {
	pos, err := c.parsePositional("oauth allow-host", args, []string{"HOST"}, nil)
	if err != nil {
		return err
	}
	host := strings.ToLower(strings.TrimSpace(pos[0]))
	if host == "" || strings.ContainsAny(host, "/:@?# ") {
		return usageError{fmt.Sprintf("%q is not a host name (give the host only, e.g. app.example.com)", pos[0])}
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if err := st.AllowHost(ctx, host); err != nil {
		return err
	}
	c.print(map[string]any{"host": host, "allowed": true}, fmt.Sprintf("redirect host %s allowed", host))
	return nil
}

func cmdOAuthDisallowHost(ctx context.Context, c *cli, args []string) error {
	pos, err := c.parsePositional("oauth disallow-host", args, []string{"HOST"}, nil)
	if err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	host := strings.ToLower(strings.TrimSpace(pos[0]))
	if err := st.DisallowHost(ctx, host); err != nil {
		return err
	}
	c.print(map[string]any{"host": host, "allowed": false}, fmt.Sprintf("redirect host %s no longer allowed", host))
	return nil
}

func cmdOAuthHosts(ctx context.Context, c *cli, args []string) error {
	st, err := c.parseOpen(ctx, "oauth hosts", args)
	if err != nil {
		return err
	}
	hosts, err := st.AllowedHosts(ctx)
	if err != nil {
		return err
	}
	if hosts == nil {
		hosts = []string{}
	}
	c.print(map[string]any{"hosts": hosts}, strings.Join(hosts, "\n"))
	return nil
}

func cmdOAuthClients(ctx context.Context, c *cli, args []string) error {
	st, err := c.parseOpen(ctx, "oauth clients", args)
	if err != nil {
		return err
	}
	clients, err := st.OAuthClients(ctx)
	if err != nil {
		return err
	}
	type row struct {
		ClientID     string   `json:"clientId"`
		Name         string   `json:"name"`
		RedirectURIs []string `json:"redirectUris"`
		CreatedAt    string   `json:"createdAt"`
	}
	printList(c, "clients", "CLIENT ID\tNAME\tREDIRECT URIS\tCREATED", clients, func(cl store.OAuthClient) (row, string) {
		at := cl.CreatedAt.Format(time.RFC3339)
		return row{cl.ClientID, cl.Name, cl.RedirectURIs, at},
			fmt.Sprintf("%s\t%s\t%s\t%s", cl.ClientID, cl.Name, strings.Join(cl.RedirectURIs, " "), at)
	})
	return nil
}

func cmdOAuthGrants(ctx context.Context, c *cli, args []string) error {
	var user int64
	account, st, err := c.openAccount(ctx, "oauth grants", args, func(fs *flag.FlagSet) {
		fs.Int64Var(&user, "user", 0, "only this user's grants")
	})
	if err != nil {
		return err
	}
	grants, err := st.OAuthGrants(ctx, account, user)
	if err != nil {
		return err
	}
	type row struct {
		ID        int64    `json:"id"`
		UserID    int64    `json:"userId"`
		ClientID  string   `json:"clientId"`
		Scopes    []string `json:"scopes"`
		CreatedAt string   `json:"createdAt"`
		Revoked   bool     `json:"revoked"`
	}
	printList(c, "grants", "ID\tUSER\tCLIENT ID\tSCOPES\tCREATED\tREVOKED", grants, func(g store.OAuthGrant) (row, string) {
		at := g.CreatedAt.Format(time.RFC3339)
		return row{g.ID, g.UserID, g.ClientID, g.Scopes, at, g.RevokedAt != nil},
			fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%t", g.ID, g.UserID, g.ClientID, strings.Join(g.Scopes, " "), at, g.RevokedAt != nil)
	})
	return nil
}

func cmdOAuthRevokeGrant(ctx context.Context, c *cli, args []string) error {
	return revokeByID(ctx, c, "oauth revoke-grant", "grant", args, (*store.Store).RevokeOAuthGrant, " with all its tokens")
}
