package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"
)

func cmdOAuthAllowHost(ctx context.Context, c *cli, args []string) error {
	pos, err := c.parsePositional("oauth allow-host", args, 1, nil)
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
	pos, err := c.parsePositional("oauth disallow-host", args, 1, nil)
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
	if err := c.parse("oauth hosts", args, nil); err != nil {
		return err
	}
	st, err := c.open(ctx)
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
	if err := c.parse("oauth clients", args, nil); err != nil {
		return err
	}
	st, err := c.open(ctx)
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
	rows := []row{}
	header := "CLIENT ID\tNAME\tREDIRECT URIS\tCREATED"
	var lines []string
	for _, cl := range clients {
		at := cl.CreatedAt.Format(time.RFC3339)
		rows = append(rows, row{cl.ClientID, cl.Name, cl.RedirectURIs, at})
		lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t%s\n", cl.ClientID, cl.Name, strings.Join(cl.RedirectURIs, " "), at))
	}
	c.table(map[string]any{"clients": rows}, header, lines)
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
	rows := []row{}
	header := "ID\tUSER\tCLIENT ID\tSCOPES\tCREATED\tREVOKED"
	var lines []string
	for _, g := range grants {
		at := g.CreatedAt.Format(time.RFC3339)
		rows = append(rows, row{g.ID, g.UserID, g.ClientID, g.Scopes, at, g.RevokedAt != nil})
		lines = append(lines, fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%t\n", g.ID, g.UserID, g.ClientID, strings.Join(g.Scopes, " "), at, g.RevokedAt != nil))
	}
	c.table(map[string]any{"grants": rows}, header, lines)
	return nil
}

func cmdOAuthRevokeGrant(ctx context.Context, c *cli, args []string) error {
	var account, id int64
	if err := c.parse("oauth revoke-grant", args, func(fs *flag.FlagSet) {
		fs.Int64Var(&account, "account", 0, "account id (required)")
		fs.Int64Var(&id, "id", 0, "grant id (required)")
	}); err != nil {
		return err
	}
	if account <= 0 || id <= 0 {
		return usageError{"--account and --id are required"}
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if err := st.RevokeOAuthGrant(ctx, account, id); err != nil {
		return err
	}
	c.print(map[string]any{"id": id, "revoked": true}, fmt.Sprintf("grant %d revoked with all its tokens", id))
	return nil
}
