package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"switchboard/internal/bytesize"
	"switchboard/internal/money"
	"switchboard/internal/store"
)

// cmdBackup copies a SQLite database while it serves (--to) or checks such
// a copy (--check). docs/operations.md "Backups" is the operator's guide.
func cmdBackup(ctx context.Context, c *cli, args []string) error {
	var to, check string
	var force bool
	if err := c.parse("backup", args, func(fs *flag.FlagSet) {
		fs.StringVar(&to, "to", "", "write a consistent copy of the --db SQLite database to this file, while it serves")
		fs.StringVar(&check, "check", "", "check a copy: integrity, schema version and the ledger; opened read-only, never migrated")
		fs.BoolVar(&force, "force", false, "with --to: replace an existing file")
	}); err != nil {
		return err
	}
	switch {
	case (to == "") == (check == ""):
		return usageError{"give exactly one of --to FILE and --check FILE"}
	case check != "" && force:
		return usageError{"--force goes with --to"}
	case check != "":
		return backupCheck(ctx, c, check, nil)
	}
	return backupTo(ctx, c, to, force)
}

// backupTo writes the copy to a temporary file beside target and renames it
// into place once complete and synced: target is never a partial copy, and
// an existing target (with --force) stays whole until the rename.
func backupTo(ctx context.Context, c *cli, target string, force bool) error {
	switch store.EngineOf(c.db) {
	case store.Postgres:
		return errors.New("this database is PostgreSQL: back it up with pg_dump (pg_dump -Fc), and for point-in-time recovery with WAL archiving; see docs/operations.md \"Backups\"")
	case "":
		return usageError{fmt.Sprintf("--db %q: use a file path or sqlite://PATH (PostgreSQL is backed up with pg_dump)", c.db)}
	}
	src, _ := store.SQLitePath(c.db)
	abs, err := filepath.Abs(target)
	if err != nil {
		return err
	}
	target = abs

	// The target first, before any work: refusals name the path and why.
	if err := refuseLive(src, target, target); err != nil {
		return err
	}
	dir := filepath.Dir(target)
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot write the backup %s: directory %s does not exist", target, dir)
		}
		return fmt.Errorf("cannot write the backup %s: %s: %w", target, dir, pathReason(err))
	} else if !fi.IsDir() {
		return fmt.Errorf("cannot write the backup %s: %s is not a directory", target, dir)
	}
	switch fi, err := os.Stat(target); {
	case err == nil && fi.IsDir():
		return fmt.Errorf("cannot write the backup %s: it is a directory", target)
	case err == nil && !force:
		return fmt.Errorf("%s already exists: pass --force to replace it", target)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot write the backup %s: %w", target, pathReason(err))
	}
	// VACUUM INTO writes into an empty file; 0600 since the copy holds
	// everything the database does (key and password hashes, messages).
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".partial-*")
	if err != nil {
		return fmt.Errorf("cannot write the backup %s: cannot create files in %s: %w", target, dir, pathReason(err))
	}
	tmpName := tmp.Name()
	tmp.Close()
	done := false
	defer func() {
		if !done {
			os.Remove(tmpName)
		}
	}()
	if err := refuseLive(src, target, tmpName); err != nil {
		return err
	}

	// The source must exist: opening would otherwise create an empty one.
	if err := existingDatabase(src); err != nil {
		return err
	}
	// Opened without migrating: a backup changes
	// nothing in the database it copies, whichever binary takes it.
	st, err := c.openAsIs(ctx)
	if err != nil {
		return err
	}
	total, err := st.SizeBytes(ctx)
	if err != nil {
		return err
	}

	start := time.Now()
	stopProgress := c.progress(tmpName, total)
	err = st.Backup(ctx, tmpName)
	stopProgress()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; nothing written to %s", target)
		}
		return err
	}
	// SQLite does not sync what VACUUM INTO wrote: sync the file, then
	// the directory after the rename, so the copy survives a power loss.
	if err := syncFile(tmpName); err != nil {
		return fmt.Errorf("sync %s: %w", tmpName, err)
	}
	// Again: a file of the database may have appeared meanwhile (its -wal,
	// when a server started on it).
	if err := refuseLive(src, target, target); err != nil {
		return err
	}
	if err := os.Rename(tmpName, target); err != nil {
		return fmt.Errorf("cannot write the backup %s: %w", target, pathReason(err))
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	took := time.Since(start)
	fi, err := os.Stat(target)
	if err != nil {
		return err
	}
	st.Close()
	c.st = nil
	return backupCheck(ctx, c, target, &backupWritten{File: target, Bytes: fi.Size(), Seconds: took.Seconds(), took: took})
}

// existingDatabase refuses a SQLite path where no database file is:
// opening it would create one.
func existingDatabase(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no database at %s (--db)", path)
	case err != nil:
		return fmt.Errorf("database %s: %w", path, pathReason(err))
	case !fi.Mode().IsRegular():
		return fmt.Errorf("database %s is not a regular file", path)
	}
	return nil
}

// refuseLive refuses to write the backup target through the file path
// (target itself, or its temporary file) when path is a file of the
// database at src: the database, its -wal, -shm or -journal, or the lock a
// server holds. Renaming the copy over one loses the server's writes: over
// the -wal, every commit since the last checkpoint, while the server goes
// on acknowledging sends into the file it still holds open. A file that
// exists is compared by identity (a hard link, another spelling); one that
// may not exist yet (the -wal of a database no server holds open) by path,
// with every symlink resolved.
func refuseLive(src, target, path string) error {
	resolved := resolvePath(path)
	fi, statErr := os.Stat(path)
	// SQLite names its files after the database's real path; the server
	// its lock after --db as written.
	for _, db := range []string{src, resolvePath(src)} {
		for _, f := range store.SQLiteFiles(db) {
			same := resolvePath(f.Path) == resolved
			if lfi, err := os.Stat(f.Path); !same && statErr == nil && err == nil {
				same = os.SameFile(fi, lfi)
			}
			if !same {
				continue
			}
			live, _ := filepath.Abs(f.Path)
			if path != target {
				return fmt.Errorf("cannot write the backup %s: its temporary file %s is %s, %s: back it up to another file", target, path, live, f.What)
			}
			return fmt.Errorf("cannot write the backup %s: it is %s, %s: back it up to another file", target, live, f.What)
		}
	}
	return nil
}

// resolvePath is path made absolute with every symlink in it resolved, as
// far as it exists: a missing last element is followed if it is a symlink
// (dangling, it names the file that writing through it creates), else
// appended to its resolved directory.
func resolvePath(path string) string { return resolveDepth(path, 0) }

func resolveDepth(path string, depth int) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	if depth > 40 { // a loop of symlinks
		return path
	}
	dir := resolveDepth(filepath.Dir(path), depth+1)
	if link, err := os.Readlink(path); err == nil {
		if !filepath.IsAbs(link) {
			link = filepath.Join(dir, link)
		}
		return resolveDepth(link, depth+1)
	}
	return filepath.Join(dir, filepath.Base(path))
}

// backupWritten is what backup --to reports before the check of the copy.
type backupWritten struct {
	File    string  `json:"file"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	took    time.Duration
}

func syncFile(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// pathReason drops a *fs.PathError's operation and path, which the
// messages above name themselves, keeping the reason ("permission denied").
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// progress shows, on a terminal, how far the copy has come: the temporary
// file's size against the database's, every 200 ms. It shows nothing when
// stderr is not a terminal or the output is JSON. The returned function
// stops it and clears the line.
func (c *cli) progress(file string, total int64) (stop func()) {
	f, ok := c.stderr.(*os.File)
	if c.json || !ok || !term.IsTerminal(int(f.Fd())) || total <= 0 {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		const mib = 1 << 20
		for {
			select {
			case <-quit:
				fmt.Fprint(f, "\r\033[K")
				return
			case <-tick.C:
			}
			fi, err := os.Stat(file)
			if err != nil {
				continue
			}
			n := min(fi.Size(), total)
			// Integer tenths: the display needs no float.
			fmt.Fprintf(f, "\r\033[Kbacking up: %3d%%  %d.%d of %d.%d MiB", n*100/total,
				n/mib, n%mib*10/mib, total/mib, total%mib*10/mib)
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
	}
}

// checkReport is backup --check's report (its --json output, with the
// backup's own lines when --to wrote the copy).
type checkReport struct {
	Backup      *backupWritten `json:"backup,omitempty"`
	File        string         `json:"file"`
	OK          bool           `json:"ok"`
	Failed      []string       `json:"failed"`
	Integrity   []string       `json:"integrityCheck"`
	ForeignKeys []string       `json:"foreignKeyCheck"`
	NotTables   []string       `json:"notTables"` // the tables the check reads that are something else, or missing
	Schema      schemaReport   `json:"schema"`
	Ledger      *ledgerReport  `json:"ledger,omitempty"`
}

type schemaReport struct {
	Latest  string `json:"latest"` // the copy's latest applied migration
	Applied int    `json:"applied"`
	Pending int    `json:"pending"` // this binary would apply them when serving the copy
	Unknown int    `json:"unknown"` // applied by a newer Switchboard
	State   string `json:"state"`   // current, older, newer or empty
}

type ledgerReport struct {
	Charges  int64           `json:"charges"`
	Accounts []accountLedger `json:"accounts"`
	Checks   []ledgerRule    `json:"checks"`
}

type accountLedger struct {
	Account  int64        `json:"account"`
	Name     string       `json:"name"`
	Currency string       `json:"currency"`
	Charges  int64        `json:"charges"`
	Total    money.Micros `json:"total"`
}

type ledgerRule struct {
	Rule     string  `json:"rule"`
	OK       bool    `json:"ok"`
	Count    int     `json:"count"`
	Kind     string  `json:"kind"` // what examples are ids of: ledger or message
	Examples []int64 `json:"examples"`
}

// checkTime bounds backup --check: a check still running past it is
// stopped (SQLite interrupted) and reported, not waited on, since a hostile
// or damaged file can keep SQLite busy for ever. integrity_check reads
// every page, so the bound grows with the file: base, plus a second for
// every perSecond bytes of the file and its -wal (a sound copy checks at
// ten times that pace or more). Tests shorten it.
var checkTime = struct {
	base      time.Duration
	perSecond int64
}{30 * time.Second, 4 << 20}

// checkBound is checkTime's bound for the copy at file.
func checkBound(file string) time.Duration {
	var size int64
	for _, f := range []string{file, file + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			size += fi.Size()
		}
	}
	return checkTime.base + time.Duration(size/checkTime.perSecond)*time.Second
}

// backupCheck opens the copy read-only, without migrating it, and reports
// its integrity, its schema version and its ledger. Any failed check is an
// error naming it (exit status 1), after the report. A check that does not
// finish within checkBound is an error, without a report.
func backupCheck(ctx context.Context, c *cli, file string, written *backupWritten) error {
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	bound := checkBound(file)
	bounded, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	r, err := checkCopy(bounded, c, file)
	if err != nil && ctx.Err() == nil && errors.Is(bounded.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("check of %s did not finish within %s (%s plus 1s per %s of the file): a sound copy checks well within that; this file is damaged or built to stall the check",
			file, bound, checkTime.base, bytesize.Format(checkTime.perSecond))
	}
	if err != nil {
		return err
	}
	r.Backup = written
	c.print(r, r.text())
	if !r.OK {
		return fmt.Errorf("check of %s failed: %s", file, strings.Join(r.Failed, "; "))
	}
	return nil
}

// checkCopy runs backupCheck's checks on the copy at file.
func checkCopy(ctx context.Context, c *cli, file string) (checkReport, error) {
	r := checkReport{File: file, Failed: []string{}, NotTables: []string{}}
	st, err := store.OpenCopy(ctx, file)
	if err != nil {
		return r, err
	}
	c.st = st
	if r.Integrity, r.ForeignKeys, err = st.Integrity(ctx); err != nil {
		return r, err
	}
	if len(r.Integrity) > 0 {
		r.Failed = append(r.Failed, "integrity_check")
	}
	if len(r.ForeignKeys) > 0 {
		r.Failed = append(r.Failed, "foreign_key_check")
	}
	r.Integrity, r.ForeignKeys = nonNil(r.Integrity), nonNil(r.ForeignKeys)

	// Only tables are read: a view of a table's name would run in its
	// place (a recursive one for ever), and a trigger or index of that
	// name means the table is not there.
	kinds, err := st.SchemaKinds(ctx, store.CheckedTables...)
	if err != nil {
		return r, err
	}
	for _, name := range store.CheckedTables {
		switch kind := kinds[name]; {
		case kind == "table":
		case kind != "":
			r.NotTables = append(r.NotTables, fmt.Sprintf("%s is a %s, not a table", name, kind))
		case name != "schema_migrations": // its absence is the schema's finding
			r.NotTables = append(r.NotTables, name+" is missing")
		}
	}
	for _, p := range r.NotTables {
		r.Failed = append(r.Failed, "tables: "+p)
	}

	if err := r.checkSchema(ctx, st); err != nil {
		return r, err
	}
	if r.Schema.Applied > 0 && len(r.NotTables) == 0 {
		if r.Ledger, err = checkLedger(ctx, st, &r.Failed); err != nil {
			return r, err
		}
	}
	r.OK = len(r.Failed) == 0
	return r, nil
}

// checkSchema fills r.Schema from the copy's migrations.
func (r *checkReport) checkSchema(ctx context.Context, st *store.Store) error {
	migrations, err := st.Migrations(ctx)
	if err != nil {
		return err
	}
	for _, m := range migrations {
		switch {
		case !m.Known:
			r.Schema.Unknown++
		case m.AppliedAt.IsZero():
			r.Schema.Pending++
		}
		if !m.AppliedAt.IsZero() {
			r.Schema.Applied++
			r.Schema.Latest = m.Version
		}
	}
	switch {
	case r.Schema.Applied == 0:
		r.Schema.State = "empty"
		r.Failed = append(r.Failed, "schema: no migration applied (not a Switchboard database)")
	case r.Schema.Unknown > 0:
		r.Schema.State = "newer"
	case r.Schema.Pending > 0:
		r.Schema.State = "older"
	default:
		r.Schema.State = "current"
	}
	return nil
}

// checkLedger sums the copy's ledger and checks its agreement with the
// messages, adding each broken rule to failed.
func checkLedger(ctx context.Context, st *store.Store, failed *[]string) (*ledgerReport, error) {
	l := &ledgerReport{Accounts: []accountLedger{}}
	byAccount, err := st.ChargesByAccount(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range byAccount {
		l.Charges += a.Charges
		l.Accounts = append(l.Accounts, accountLedger{a.AccountID, a.Name, a.Currency, a.Charges, a.Total})
	}
	checks, err := st.LedgerAgreement(ctx)
	if err != nil {
		return nil, err
	}
	for _, ch := range checks {
		l.Checks = append(l.Checks, ledgerRule{ch.Name, ch.Count == 0, ch.Count, ch.Kind, ch.Examples})
		if ch.Count > 0 {
			*failed = append(*failed, "ledger: "+ch.Name)
		}
	}
	return l, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// text is the report for a reader.
func (r checkReport) text() string {
	var b strings.Builder
	if w := r.Backup; w != nil {
		fmt.Fprintf(&b, "backup written: %s (%s) in %s\n", w.File, bytesize.Format(w.Bytes), w.took.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "check of %s:\n", r.File)
	problems := func(name string, found []string) {
		if len(found) == 0 {
			fmt.Fprintf(&b, "  %-18s ok\n", name)
			return
		}
		fmt.Fprintf(&b, "  %-18s FAILED (%d)\n", name, len(found))
		for _, p := range found[:min(len(found), 10)] {
			fmt.Fprintf(&b, "    %s\n", p)
		}
	}
	problems("integrity_check", r.Integrity)
	problems("foreign_key_check", r.ForeignKeys)
	problems("tables", r.NotTables)
	s := r.Schema
	switch s.State {
	case "empty":
		fmt.Fprintf(&b, "  %-18s FAILED: no migration applied\n", "schema")
	case "current":
		fmt.Fprintf(&b, "  %-18s %s (%d migrations), this binary's latest: a server on it applies none\n", "schema", s.Latest, s.Applied)
	case "older":
		fmt.Fprintf(&b, "  %-18s %s (%d migrations); this binary applies %d more when it serves the copy\n", "schema", s.Latest, s.Applied, s.Pending)
	case "newer":
		fmt.Fprintf(&b, "  %-18s %s (%d migrations), %d of them unknown to this binary: the copy is newer; restore it with a Switchboard at least as new\n", "schema", s.Latest, s.Applied, s.Unknown)
	}
	if l := r.Ledger; l != nil {
		fmt.Fprintf(&b, "  %-18s %d charges in %d accounts\n", "ledger", l.Charges, len(l.Accounts))
		for _, a := range l.Accounts {
			name := a.Name
			if name == "" {
				name = "(no such account)"
			}
			fmt.Fprintf(&b, "    account %d %s: %d charges, %s %s\n", a.Account, name, a.Charges, a.Total, a.Currency)
		}
		for _, ch := range l.Checks {
			if ch.OK {
				fmt.Fprintf(&b, "    ok      %s\n", ch.Rule)
				continue
			}
			ids := make([]string, len(ch.Examples))
			for i, id := range ch.Examples {
				ids[i] = fmt.Sprint(id)
			}
			fmt.Fprintf(&b, "    FAILED  %s: %d %s rows, e.g. %s\n", ch.Rule, ch.Count, ch.Kind, strings.Join(ids, ", "))
		}
	}
	if r.OK {
		b.WriteString("check passed\n")
	} else {
		fmt.Fprintf(&b, "check FAILED: %s\n", strings.Join(r.Failed, "; "))
	}
	return b.String()
}
