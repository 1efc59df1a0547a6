package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/blob"
	"switchboard/internal/calls"
	"switchboard/internal/store"
)

// mediaFlag adds --media to a command that stores blobs outside serve.
func (c *cli) mediaFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.media, "media", env("MEDIA", ""), "blob store for attachments and recordings: file:///abs/dir or s3://bucket?region=…; default file://<cwd>/switchboard-media (SWITCHBOARD_MEDIA)")
}

// openMedia opens the configured blob store.
func (c *cli) openMedia(ctx context.Context) (*blob.Store, error) {
	u := c.media
	if u == "" {
		dir, err := filepath.Abs("switchboard-media")
		if err != nil {
			return nil, err
		}
		u = "file://" + filepath.ToSlash(dir)
	} else if err := blob.CheckURL(u); err != nil {
		return nil, usageError{fmt.Sprintf("--media: %v", err)}
	}
	return blob.Open(ctx, u)
}

func cmdCallsImport(ctx context.Context, c *cli, args []string) error {
	var account int64
	var format, zone string
	var extDigits int
	pos, err := c.parsePositional("calls import", args, []string{"FILE"}, func(fs *flag.FlagSet) {
		fs.Int64Var(&account, "account", 0, "account id (required)")
		fs.StringVar(&format, "format", "jsonl", "input format: jsonl (the ingest format, one call per line) or asterisk-csv (cdr_csv's Master.csv)")
		fs.StringVar(&zone, "timezone", "UTC", "asterisk-csv: IANA zone of the CSV's times (UTC when cdr.conf has usegmtime=yes)")
		fs.IntVar(&extDigits, "extension-digits", 6, "asterisk-csv: numbers this long or shorter are extensions, not outside numbers")
		c.mediaFlag(fs)
		c.logFlags(fs)
	})
	if err != nil {
		return err
	}
	if account <= 0 {
		return usageError{"--account is required"}
	}
	if format != "jsonl" && format != "asterisk-csv" {
		return usageError{fmt.Sprintf("unknown --format %q (want jsonl or asterisk-csv)", format)}
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return usageError{fmt.Sprintf("--timezone %q is not an IANA zone", zone)}
	}
	if extDigits < 1 {
		return usageError{"--extension-digits must be at least 1"}
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if _, err := st.Account(ctx, account); err != nil {
		return err
	}
	media, err := c.openMedia(ctx)
	if err != nil {
		return err
	}
	defer media.Close()
	log, flush, err := c.logger()
	if err != nil {
		return err
	}
	defer flush()
	svc := calls.New(calls.Config{Store: st, Blobs: media, Log: log})

	bar := newProgress(c.stderr, f)
	b := svc.NewBatch(ctx, account, 16, bar.update)
	var rerr error
	if format == "asterisk-csv" {
		users, err := st.Users(ctx, account)
		if err != nil {
			b.Wait()
			return err
		}
		exts := map[string]string{}
		for _, u := range users {
			for _, e := range append([]string{u.Extension}, u.Extensions...) {
				if e != "" {
					exts[e] = strconv.FormatInt(u.ID, 10)
				}
			}
		}
		rerr = calls.ReadAsteriskCSV(bar.reader(f), calls.AsteriskOptions{Location: loc, ExtensionDigits: extDigits, Users: exts}, b)
	} else {
		rerr = calls.ReadJSONLines(bar.reader(f), b)
	}
	sum := b.Wait()
	bar.finish()
	if rerr != nil {
		return rerr
	}
	printSummary(c, sum)
	return nil
}

func printSummary(c *cli, sum calls.Summary) {
	var b strings.Builder
	fmt.Fprintf(&b, "imported %d, replaced %d, skipped %d", sum.Imported, sum.Replaced, sum.Skipped)
	if sum.Events > 0 {
		fmt.Fprintf(&b, ", real-time events %d", sum.Events)
	}
	b.WriteString("\n")
	for _, p := range sum.Problems {
		id := ""
		if p.ID != "" {
			id = " (" + p.ID + ")"
		}
		fmt.Fprintf(&b, "  line %d%s: %s\n", p.Line, id, p.Reason)
	}
	c.print(sum, b.String())
}

// progress draws a progress bar on a terminal: the share of the input read
// and the number of calls done. Off a terminal it draws nothing.
type progress struct {
	w    io.Writer
	on   bool
	size int64
	mu   sync.Mutex
	read int64
	done int
	last time.Time
}

func newProgress(w io.Writer, f *os.File) *progress {
	p := &progress{w: w}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		p.size = fi.Size()
	}
	if tf, ok := w.(*os.File); ok {
		if fi, err := tf.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

type countingReader struct {
	r io.Reader
	p *progress
}

func (cr countingReader) Read(b []byte) (int, error) {
	n, err := cr.r.Read(b)
	cr.p.mu.Lock()
	cr.p.read += int64(n)
	cr.p.mu.Unlock()
	return n, err
}

func (p *progress) reader(r io.Reader) io.Reader { return countingReader{r, p} }

func (p *progress) update(done int) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = done
	if time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.draw()
}

func (p *progress) draw() {
	const width = 30
	frac := 0.0
	if p.size > 0 {
		frac = min(1, float64(p.read)/float64(p.size))
	}
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%%  %d calls", strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100, p.done)
}

func (p *progress) finish() {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw()
	fmt.Fprintln(p.w)
}

func cmdRecordingsRevoke(ctx context.Context, c *cli, args []string) error {
	var call string
	id, st, err := c.openAccount(ctx, "recordings revoke", args, func(fs *flag.FlagSet) {
		fs.StringVar(&call, "call", "", "call id, unixtime.sequence (required)")
	})
	if err != nil {
		return err
	}
	if call == "" {
		return usageError{"--call is required"}
	}
	if err := calls.New(calls.Config{Store: st}).RevokeLinks(ctx, id, call); err != nil {
		return err
	}
	c.print(map[string]any{"account": id, "call": call, "revoked": true},
		fmt.Sprintf("recording links of call %s revoked; links handed out from now on work", call))
	return nil
}

func cmdRecordingsRotateKey(ctx context.Context, c *cli, args []string) error {
	st, err := c.parseOpen(ctx, "recordings rotate-key", args)
	if err != nil {
		return err
	}
	if err := calls.New(calls.Config{Store: st}).RotateKey(ctx); err != nil {
		return err
	}
	c.print(map[string]any{"rotated": true}, "recording link key rotated: every recording link handed out so far stops working")
	return nil
}

func cmdIngestTokenCreate(ctx context.Context, c *cli, args []string) error {
	var name string
	id, st, err := c.openAccount(ctx, "ingest-token create", args, func(fs *flag.FlagSet) {
		fs.StringVar(&name, "name", "phone system", "a name to tell tokens apart")
	})
	if err != nil {
		return err
	}
	secret, t, err := auth.NewIngestToken(ctx, st, id, name)
	if err != nil {
		return err
	}
	c.print(map[string]any{"id": t.ID, "account": id, "name": t.Name, "token": secret},
		fmt.Sprintf("ingest token %d created for account %d (shown once; push calls to POST /api/ingest/v1/calls with it as a bearer token):\n%s", t.ID, id, secret))
	return nil
}

func cmdIngestTokenList(ctx context.Context, c *cli, args []string) error {
	id, st, err := c.openAccount(ctx, "ingest-token list", args, nil)
	if err != nil {
		return err
	}
	list, err := st.IngestTokens(ctx, id)
	if err != nil {
		return err
	}
	type row struct {
		ID        int64  `json:"id"`
		Name      string `json:"name"`
		Prefix    string `json:"prefix"`
		CreatedAt string `json:"createdAt"`
		RevokedAt string `json:"revokedAt,omitempty"`
	}
	printList(c, "tokens", "ID\tNAME\tPREFIX\tCREATED\tREVOKED", list, func(t store.IngestToken) (row, string) {
		r := row{ID: t.ID, Name: t.Name, Prefix: t.Prefix, CreatedAt: time.UnixMicro(t.CreatedAt).UTC().Format(time.RFC3339)}
		if t.RevokedAt != nil {
			r.RevokedAt = time.UnixMicro(*t.RevokedAt).UTC().Format(time.RFC3339)
		}
		return r, fmt.Sprintf("%d\t%s\t%s…\t%s\t%s", r.ID, r.Name, r.Prefix, r.CreatedAt, r.RevokedAt)
	})
	return nil
}

func cmdIngestTokenRevoke(ctx context.Context, c *cli, args []string) error {
	return revokeByID(ctx, c, "ingest-token revoke", "ingest token", args, (*store.Store).RevokeIngestToken, "")
}
