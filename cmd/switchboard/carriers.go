package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/carriers"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// settingFlags defines a flag for every setting of every kind (one flag per
// name), and returns those the person gave.
func settingFlags(fs *flag.FlagSet) func() map[string]string {
	given := map[string]*optionalString{}
	for _, kind := range carriers.KindNames() {
		for _, s := range carriers.Kinds[kind] {
			if given[s.Name] == nil {
				given[s.Name] = &optionalString{}
				fs.Var(given[s.Name], s.Name, "a setting of the kinds that take it (see switchboard carrier kinds)")
			}
		}
	}
	return func() map[string]string {
		out := map[string]string{}
		for name, v := range given {
			if v.set {
				out[name] = v.value
			}
		}
		return out
	}
}

func cmdCarrierAdd(ctx context.Context, c *cli, args []string) error {
	var kind string
	var disabled bool
	var given func() map[string]string
	pos, err := c.parsePositional("carrier add", args, []string{"NAME"}, func(fs *flag.FlagSet) {
		fs.StringVar(&kind, "kind", "", "the connection's kind: "+strings.Join(carriers.KindNames(), ", ")+" (required)")
		fs.BoolVar(&disabled, "disabled", false, "add it disabled (its lines' texts are refused until it is enabled)")
		given = settingFlags(fs)
	})
	if err != nil {
		return err
	}
	if err := carriers.CheckName(pos[0]); err != nil {
		return err
	}
	conn := store.CarrierConnection{Name: pos[0], Kind: kind, Settings: map[string]string{}, Secrets: map[string]string{}, Disabled: disabled}
	if err := carriers.Apply(kind, given(), conn.Settings, conn.Secrets); err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if err := st.CreateCarrier(ctx, &conn); err != nil {
		return err
	}
	c.print(carrierJSON(c, conn, nil), fmt.Sprintf("carrier connection %s (%s) added; a running server starts it within seconds", conn.Name, conn.Kind))
	return nil
}

func cmdCarrierSet(ctx context.Context, c *cli, args []string) error {
	var disabled optionalBool
	var given func() map[string]string
	pos, err := c.parsePositional("carrier set", args, []string{"NAME"}, func(fs *flag.FlagSet) {
		fs.Var(&disabled, "disabled", "disable (true) or enable (false) the connection")
		given = settingFlags(fs)
	})
	if err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	conn, err := st.CarrierByName(ctx, pos[0])
	if err != nil {
		return err
	}
	if err := carriers.Apply(conn.Kind, given(), conn.Settings, conn.Secrets); err != nil {
		return err
	}
	disabled.apply(&conn.Disabled)
	if err := st.UpdateCarrier(ctx, &conn); err != nil {
		return err
	}
	c.print(carrierJSON(c, conn, nil), fmt.Sprintf("carrier connection %s updated; a running server applies it within seconds", conn.Name))
	return nil
}

func cmdCarrierList(ctx context.Context, c *cli, args []string) error {
	if err := c.parse("carrier list", args, func(fs *flag.FlagSet) {
		fs.StringVar(&c.publicURL, "public-url", env("PUBLIC_URL", ""), "the server's public base URL, to show each connection's callback URLs (SWITCHBOARD_PUBLIC_URL)")
	}); err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	all, err := st.Carriers(ctx)
	if err != nil {
		return err
	}
	lines, err := st.CarrierLines(ctx)
	if err != nil {
		return err
	}
	waiting, sending, err := st.CarrierQueueCounts(ctx)
	if err != nil {
		return err
	}
	held, err := st.CarrierBinds(ctx)
	if err != nil {
		return err
	}
	binds := map[int64][]store.CarrierBind{}
	for _, b := range held {
		binds[b.CarrierID] = append(binds[b.CarrierID], b)
	}
	for i, conn := range all {
		if conn.State == "bound" && len(binds[conn.ID]) == 0 {
			// Its last holder stopped: no node holds a bind now.
			all[i].State, all[i].LastError = "down", "no node holds one of its binds: is a server running?"
		}
	}
	printList(c, "carriers", "NAME\tKIND\tSTATE\tLINES\tQUEUED\tBINDS", all, func(conn store.CarrierConnection) (map[string]any, string) {
		state := cmp.Or(conn.State, "not started")
		if !conn.StateSince.IsZero() {
			state += " since " + conn.StateSince.UTC().Format(time.RFC3339)
		}
		if conn.LastError != "" {
			state += ": " + conn.LastError
		}
		out := carrierJSON(c, conn, lines[conn.ID])
		inFlight := sending[conn.ID]
		bl := []map[string]any{}
		for _, b := range binds[conn.ID] {
			inFlight += b.InFlight
			node, _, _ := strings.Cut(b.Owner, "/")
			bl = append(bl, map[string]any{"slot": b.Slot, "node": node, "inFlight": b.InFlight, "leaseUntil": b.LeaseUntil.UTC().Format(time.RFC3339Nano)})
		}
		throughput, _ := strconv.Atoi(conn.Settings["throughput"])
		out["queued"], out["inFlight"], out["throughput"], out["binds"] = waiting[conn.ID], inFlight, throughput, bl
		out["numberThroughput"] = cmp.Or(conn.Settings["number-throughput"], "0")
		return out, fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%d", termSafe(conn.Name), conn.Kind, termSafe(state), len(lines[conn.ID]), waiting[conn.ID], len(bl))
	})
	return nil
}

// carrierJSON is a connection as the carrier commands print it: its
// secrets as "set", never their values.
func carrierJSON(c *cli, conn store.CarrierConnection, lines []string) map[string]any {
	secrets := map[string]string{}
	for _, kind := range []string{conn.Kind} {
		for _, s := range carriers.Kinds[kind] {
			if s.Secret {
				secrets[s.Name] = "not set"
				if conn.Secrets[s.Name] != "" {
					secrets[s.Name] = "set"
				}
			}
		}
	}
	settings := map[string]string{}
	for k, v := range conn.Settings {
		settings[k] = v
	}
	if lines == nil {
		lines = []string{}
	}
	sort.Strings(lines)
	var since any
	if !conn.StateSince.IsZero() {
		since = conn.StateSince.UTC().Format(time.RFC3339Nano)
	}
	out := map[string]any{"name": conn.Name, "kind": conn.Kind, "disabled": conn.Disabled, "settings": settings, "secrets": secrets,
		"state": cmp.Or(conn.State, "not started"), "since": since, "lastError": conn.LastError, "node": conn.StateNode, "lines": lines}
	if base := strings.TrimRight(c.publicURL, "/"); base != "" {
		for k, v := range callbackURLs(conn.Kind, base+"/carrier/"+conn.Name) {
			out[k] = v
		}
	}
	return out
}

// callbackURLs are the URLs the operator gives the provider, by kind.
func callbackURLs(kind, base string) map[string]string {
	switch kind {
	case "kannel":
		return map[string]string{"inboundUrl": base + "/inbound", "statusUrl": base + "/dlr"}
	case "twilio":
		return map[string]string{"inboundUrl": base + "/inbound", "statusUrl": base + "/status"}
	case "telnyx":
		// One webhook for both, given with each message and set on the
		// messaging profile for inbound texts.
		return map[string]string{"inboundUrl": base + "/webhook", "statusUrl": base + "/webhook"}
	}
	return nil
}

func cmdCarrierRemove(ctx context.Context, c *cli, args []string) error {
	pos, err := c.parsePositional("carrier remove", args, []string{"NAME"}, nil)
	if err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if err := st.DeleteCarrier(ctx, pos[0]); err != nil {
		return err
	}
	c.print(map[string]any{"name": pos[0], "removed": true}, fmt.Sprintf("carrier connection %s removed", pos[0]))
	return nil
}

func cmdCarrierKinds(_ context.Context, c *cli, args []string) error {
	if err := c.parse("carrier kinds", args, nil); err != nil {
		return err
	}
	out := map[string][]map[string]any{}
	for _, kind := range carriers.KindNames() {
		out[kind] = []map[string]any{}
		for _, s := range carriers.Kinds[kind] {
			out[kind] = append(out[kind], map[string]any{"name": s.Name, "secret": s.Secret, "required": s.Required, "help": s.Help})
		}
	}
	if c.json {
		c.print(out, "")
		return nil
	}
	for _, kind := range carriers.KindNames() {
		fmt.Fprintf(c.stdout, "%s\n", kind)
		for _, s := range carriers.Kinds[kind] {
			fmt.Fprintf(c.stdout, "  %s\n", s)
		}
	}
	return nil
}

// cmdLineSet sets a line's carrier connection, by its number.
func cmdLineSet(ctx context.Context, c *cli, args []string) error {
	var number, carrier string
	account, st, err := c.openAccount(ctx, "line set", args, func(fs *flag.FlagSet) {
		fs.StringVar(&number, "number", "", "the line's number (required)")
		fs.StringVar(&carrier, "carrier", "", "the carrier connection its texts go through (required; \"default\": the server's --carrier flags)")
	})
	if err != nil {
		return err
	}
	if number == "" || carrier == "" {
		return usageError{"--number and --carrier are required"}
	}
	norm, err := phone.Parse(number)
	if err != nil {
		return usageError{fmt.Sprintf("--number %q: %v", number, err)}
	}
	id, err := carrierID(ctx, st, carrier)
	if err != nil {
		return err
	}
	if err := st.SetLineCarrier(ctx, account, norm, id); err != nil {
		return err
	}
	c.print(map[string]any{"account": account, "number": norm, "carrier": carrier}, fmt.Sprintf("line %s now sends through %s", norm, carrier))
	return nil
}

// carrierID is the id of the connection called name; 0 for "default".
func carrierID(ctx context.Context, st *store.Store, name string) (int64, error) {
	if name == "default" {
		return 0, nil
	}
	conn, err := st.CarrierByName(ctx, name)
	if err != nil {
		return 0, err
	}
	return conn.ID, nil
}
