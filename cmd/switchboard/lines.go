package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	"switchboard/internal/domain"
)

// parseUserIDs parses --users: comma-separated user ids.
func parseUserIDs(s string) ([]int64, error) {
	var ids []int64
	for _, p := range splitList(s) {
		id, err := strconv.ParseInt(p, 10, 64)
		if err != nil || id <= 0 {
			return nil, usageError{fmt.Sprintf("--users: %q is not a user id", p)}
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func cmdLineEdit(ctx context.Context, c *cli, args []string) error {
	var id int64
	var name, users optionalString
	var bulk, noSMS optionalBool
	account, st, err := c.openAccount(ctx, "line edit", args, func(fs *flag.FlagSet) {
		fs.Int64Var(&id, "id", 0, "line id (required)")
		fs.Var(&name, "name", "caller-ID `name`")
		fs.Var(&users, "users", "comma-separated user `ids` the line is assigned to; \"\" assigns it to every user")
		fs.Var(&bulk, "bulk", "10DLC bulk registration, reported only (true/false)")
		fs.Var(&noSMS, "no-sms", "the line cannot send or receive texts (true/false)")
	})
	if err != nil {
		return err
	}
	if id <= 0 {
		return usageError{"--id is required (switchboard line list shows the ids)"}
	}
	l, err := lineByID(ctx, c, account, id)
	if err != nil {
		return err
	}
	name.apply(&l.Name)
	bulk.apply(&l.BulkEnabled)
	if noSMS.set {
		l.SMSEnabled = !noSMS.value
	}
	if users.set {
		if l.UserIDs, err = parseUserIDs(users.value); err != nil {
			return err
		}
	}
	if err := st.UpdateLine(ctx, l); err != nil {
		return err
	}
	c.print(lineJSON(l), fmt.Sprintf("line %d updated: %s %s, users %v, bulk %t, sms %t", l.ID, l.Number, l.Name, nonNilIDs(l.UserIDs), l.BulkEnabled, l.SMSEnabled))
	return nil
}

// lineByID finds the account's line with id (the store lists lines by
// account; an account has few).
func lineByID(ctx context.Context, c *cli, account, id int64) (domain.Line, error) {
	all, err := c.st.Lines(ctx, account, false)
	if err != nil {
		return domain.Line{}, err
	}
	for _, l := range all {
		if l.ID == id {
			l.UserIDs = append([]int64(nil), l.UserIDs...) // the list is shared
			return l, nil
		}
	}
	return domain.Line{}, domain.Errorf(domain.NotFound, "line %d not found in account %d (switchboard line list --account %d)", id, account, account)
}

// lineJSON is a line as line create, edit and list print it with --json.
func lineJSON(l domain.Line) map[string]any {
	return map[string]any{"id": l.ID, "account": l.AccountID, "number": l.Number, "name": l.Name, "userIds": nonNilIDs(l.UserIDs),
		"bulkEnabled": l.BulkEnabled, "smsEnabled": l.SMSEnabled}
}

func cmdLineDelete(ctx context.Context, c *cli, args []string) error {
	var id int64
	account, st, err := c.openAccount(ctx, "line delete", args, func(fs *flag.FlagSet) {
		fs.Int64Var(&id, "id", 0, "line id (required)")
	})
	if err != nil {
		return err
	}
	if id <= 0 {
		return usageError{"--id is required (switchboard line list shows the ids)"}
	}
	if err := st.DeleteLine(ctx, account, id); err != nil {
		return err
	}
	c.print(map[string]any{"id": id, "deleted": true}, fmt.Sprintf("line %d deleted", id))
	return nil
}
