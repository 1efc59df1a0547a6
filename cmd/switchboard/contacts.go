package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"switchboard/internal/auth"
	"switchboard/internal/contacts"
	"switchboard/internal/domain"
)

// The address book's commands act as the account (as an API key would:
// every line, events "by" nobody).
func accountPrincipal(account int64) auth.Principal {
	return auth.Principal{AccountID: account, Scopes: auth.AllScopes, Credential: "cli"}
}

// parseContactFormat reads --format for import and export; "" for import means
// "by the file's extension".
func parseContactFormat(format, file string) (contacts.Format, error) {
	switch strings.ToLower(format) {
	case "csv":
		return contacts.CSV, nil
	case "vcard", "vcf":
		return contacts.VCard, nil
	case "":
		switch strings.ToLower(filepath.Ext(file)) {
		case ".vcf", ".vcard":
			return contacts.VCard, nil
		}
		return contacts.CSV, nil
	}
	return "", usageError{fmt.Sprintf("unknown --format %q (want csv or vcard)", format)}
}

func cmdContactImport(ctx context.Context, c *cli, args []string) error {
	var account int64
	var format string
	pos, err := c.parsePositional("contact import", args, []string{"FILE"}, func(fs *flag.FlagSet) {
		fs.Int64Var(&account, "account", 0, "account id (required)")
		fs.StringVar(&format, "format", "", "csv or vcard; default by the file's extension (.vcf, .vcard: vcard; otherwise csv)")
	})
	if err != nil {
		return err
	}
	if account <= 0 {
		return usageError{"--account is required"}
	}
	f, err := parseContactFormat(format, pos[0])
	if err != nil {
		return err
	}
	data, err := readLimited(pos[0], contacts.MaxImportBytes)
	if err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if _, err := st.Account(ctx, account); err != nil {
		return err
	}
	terminal := isTerminal(c.stderr)
	progress := func(done, total int) {
		if terminal {
			fmt.Fprintf(c.stderr, "\rcontacts: %d of %d rows", done, total)
			if done == total {
				fmt.Fprintln(c.stderr)
			}
		} else if done > 0 && (done == total || done%5000 == 0) {
			fmt.Fprintf(c.stderr, "contacts: %d of %d rows\n", done, total)
		}
	}
	rep, err := contacts.New(st).Import(ctx, accountPrincipal(account), f, data, progress)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "created %d, updated %d, skipped %d\n", rep.Created, rep.Updated, len(rep.Skipped))
	for _, s := range rep.Skipped {
		fmt.Fprintf(&b, "  line %d: %s\n", s.Line, s.Reason)
	}
	c.print(rep, b.String())
	return nil
}

// readLimited reads the file name, refusing one over limit bytes.
func readLimited(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes; split it", name, limit)
	}
	return data, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func cmdContactExport(ctx context.Context, c *cli, args []string) error {
	var format, to string
	account, st, err := c.openAccount(ctx, "contact export", args, func(fs *flag.FlagSet) {
		fs.StringVar(&format, "format", "csv", "csv or vcard")
		fs.StringVar(&to, "to", "", "write to this `file` (default: standard output)")
	})
	if err != nil {
		return err
	}
	if format == "" {
		return usageError{"--format must be csv or vcard"}
	}
	f, err := parseContactFormat(format, "")
	if err != nil {
		return err
	}
	if _, err := st.Account(ctx, account); err != nil {
		return err
	}
	var b strings.Builder
	if err := contacts.New(st).Export(ctx, accountPrincipal(account), f, &b); err != nil {
		return err
	}
	if to == "" {
		out := b.String()
		if isTerminal(c.stdout) {
			out = termSafe(out) // names are anyone's text: no escape sequence reaches a terminal
		}
		_, err := io.WriteString(c.stdout, out)
		return err
	}
	return os.WriteFile(to, []byte(b.String()), 0o600)
}

func cmdContactList(ctx context.Context, c *cli, args []string) error {
	var q string
	var limit int
	account, st, err := c.openAccount(ctx, "contact list", args, func(fs *flag.FlagSet) {
		fs.StringVar(&q, "q", "", "only contacts whose name or company words start with these words, or whose numbers hold these digits")
		fs.IntVar(&limit, "limit", 100, fmt.Sprintf("at most this many, newest first (1 to %d)", contacts.ExportPageLength))
	})
	if err != nil {
		return err
	}
	if limit < 1 || limit > contacts.ExportPageLength {
		return usageError{fmt.Sprintf("--limit must be from 1 to %d", contacts.ExportPageLength)}
	}
	list, err := contacts.New(st).Search(ctx, account, q, 0, limit)
	if err != nil {
		return err
	}
	printList(c, "contacts", "ID\tNAME\tCOMPANY\tNUMBERS\tTAGS", list, func(ct domain.Contact) (domain.Contact, string) {
		numbers := make([]string, len(ct.Numbers))
		for i, n := range ct.Numbers {
			numbers[i] = n.Number
			if n.Label != "" {
				numbers[i] += " (" + n.Label + ")"
			}
		}
		return ct, fmt.Sprintf("%d\t%s\t%s\t%s\t%s", ct.ID, ct.Name, ct.Company, strings.Join(numbers, ", "), strings.Join(ct.Tags, ", "))
	})
	return nil
}
