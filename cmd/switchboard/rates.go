package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/money"
)

func cmdRateSet(ctx context.Context, c *cli, args []string) error {
	var account int64
	var prefix, smsRate, mmsRate string
	if err := c.parse("rate set", args, func(fs *flag.FlagSet) {
		fs.Int64Var(&account, "account", 0, "account id (required)")
		fs.StringVar(&prefix, "prefix", "", "destination prefix, digits with country code, e.g. 1 or 4420 (required)")
		fs.StringVar(&smsRate, "sms", "", "USD per SMS segment, e.g. 0.0079 (required)")
		fs.StringVar(&mmsRate, "mms", "", "USD per MMS message, e.g. 0.02 (required)")
	}); err != nil {
		return err
	}
	if account <= 0 || prefix == "" || smsRate == "" || mmsRate == "" {
		return usageError{"--account, --prefix, --sms and --mms are required"}
	}
	if strings.Trim(prefix, "0123456789") != "" {
		return usageError{fmt.Sprintf("--prefix %q must be digits only", prefix)}
	}
	if prefix[0] == '0' {
		// Normalized numbers start with their country code, never with 0.
		return usageError{fmt.Sprintf("--prefix %q starts with 0, which no number does: start with the country code", prefix)}
	}
	r := domain.Rate{AccountID: account, Prefix: prefix}
	var err error
	if r.SMS, err = parseRate("--sms", smsRate, "0.0079"); err != nil {
		return err
	}
	if r.MMS, err = parseRate("--mms", mmsRate, "0.02"); err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if err := st.SetRate(ctx, &r); err != nil {
		return err
	}
	c.print(map[string]any{"account": account, "prefix": prefix, "sms": r.SMS, "mms": r.MMS},
		fmt.Sprintf("rate for %s… in account %d: sms %s per segment, mms %s per message", prefix, account, r.SMS, r.MMS))
	return nil
}

// maxRate caps a rate at $1,000 per unit, far above any carrier's, so that the
// price of any message (at most 30 segments fit in 2000 bytes) and an
// account's ledger total stay exact: a bigger rate would be a typo that makes
// every send to the prefix fail with 500 when its price overflows.
const maxRate = money.Micros(1000 * 1_000_000)

// parseRate reads a rate flag, saying what is wrong with a bad one.
func parseRate(flag, value, example string) (money.Micros, error) {
	m, err := money.Parse(value)
	if errors.Is(err, money.ErrOverflow) || (err == nil && m > maxRate) {
		return 0, usageError{fmt.Sprintf("%s %q is too large: at most %s", flag, value, maxRate)}
	}
	if err != nil {
		return 0, usageError{fmt.Sprintf("%s %q: want a decimal amount such as %s (at most 6 decimals)", flag, value, example)}
	}
	return m, nil
}

func cmdRateList(ctx context.Context, c *cli, args []string) error {
	account, st, err := c.openAccount(ctx, "rate list", args, nil)
	if err != nil {
		return err
	}
	rates, err := st.Rates(ctx, account)
	if err != nil {
		return err
	}
	type row struct {
		Prefix string       `json:"prefix"`
		SMS    money.Micros `json:"sms"`
		MMS    money.Micros `json:"mms"`
	}
	printList(c, "rates", "PREFIX\tSMS (USD/segment)\tMMS (USD/message)", rates, func(r domain.Rate) (row, string) {
		return row{r.Prefix, r.SMS, r.MMS}, fmt.Sprintf("%s\t%s\t%s", r.Prefix, r.SMS, r.MMS)
	})
	return nil
}

func cmdRateDelete(ctx context.Context, c *cli, args []string) error {
	var account int64
	var prefix string
	if err := c.parse("rate delete", args, func(fs *flag.FlagSet) {
		fs.Int64Var(&account, "account", 0, "account id (required)")
		fs.StringVar(&prefix, "prefix", "", "destination prefix (required)")
	}); err != nil {
		return err
	}
	if account <= 0 || prefix == "" {
		return usageError{"--account and --prefix are required"}
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if err := st.DeleteRate(ctx, account, prefix); err != nil {
		return err
	}
	c.print(map[string]any{"account": account, "prefix": prefix, "deleted": true}, fmt.Sprintf("rate for %s… deleted", prefix))
	return nil
}

func cmdLedgerList(ctx context.Context, c *cli, args []string) error {
	var limit int
	account, st, err := c.openAccount(ctx, "ledger list", args, func(fs *flag.FlagSet) {
		fs.IntVar(&limit, "limit", 100, "newest entries to show")
	})
	if err != nil {
		return err
	}
	if limit <= 0 {
		return usageError{"--limit must be positive"}
	}
	entries, err := st.Ledger(ctx, account, limit)
	if err != nil {
		return err
	}
	total, count, err := st.LedgerTotal(ctx, account)
	if err != nil {
		return err
	}
	type row struct {
		ID          int64        `json:"id"`
		MessageID   int64        `json:"messageId"`
		Amount      money.Micros `json:"amount"`
		Currency    string       `json:"currency"`
		Description string       `json:"description"`
		At          string       `json:"at"`
	}
	rows := []row{}
	header := "ID\tMESSAGE\tAMOUNT\tDESCRIPTION\tAT"
	var lines []string
	for _, e := range entries {
		at := e.CreatedAt.Format("2006-01-02T15:04:05Z")
		rows = append(rows, row{e.ID, e.MessageID, e.Amount, e.Currency, e.Description, at})
		lines = append(lines, fmt.Sprintf("%d\t%d\t%s %s\t%s\t%s\n", e.ID, e.MessageID, e.Amount, e.Currency, e.Description, at))
	}
	lines = append(lines, fmt.Sprintf("\ttotal (%d charges)\t%s USD\t\t\n", count, money.Micros(total)))
	c.table(map[string]any{"entries": rows, "total": money.Micros(total), "count": count, "currency": "USD"}, header, lines)
	return nil
}
