package calls

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/phone"
)

// Asterisk's cdr_csv backend writes Master.csv without a header, one row per
// CDR, with these columns: accountcode, src, dst, dcontext, clid, channel,
// dstchannel, lastapp, lastdata, start, answer, end, duration, billsec,
// disposition, amaflags; then uniqueid (loguniqueid=yes) and userfield
// (loguserfield=yes); then peeraccount, linkedid and sequence
// (newcdrcolumns=yes). Times are "YYYY-MM-DD HH:MM:SS", in the PBX's local
// zone unless usegmtime=yes; an unanswered call has an empty answer time.
//
// Rows become calls as follows. With linkedid, the rows sharing a linkedid
// are one call, whose id is the linkedid. Without it, rows that share a
// channel (one row's channel or dstchannel is another's) within the grouping
// window are one call, whose id is the uniqueid of its first row. Each row is
// a leg: its uniqueId is the row's uniqueid (suffixed with the sequence when
// one channel has several rows), its callId the channel's uniqueid, and it is
// bridged from the leg before it in start order.

// AsteriskOptions tune the Asterisk CDR import.
type AsteriskOptions struct {
	// Location is the zone of the CSV's times; nil means UTC (usegmtime=yes).
	Location *time.Location
	// ExtensionDigits is the longest number that is an extension rather than
	// an outside number; default 6.
	ExtensionDigits int
	// Users maps an extension to the user id (as a string) it belongs to.
	Users map[string]string
}

// groupWindow is how long after a call's last row ended its rows are still
// gathered: cdr_csv appends rows as CDRs finish, so rows of one call are
// close together in the file.
const groupWindow = 2 * time.Hour

type cdrRow struct {
	line                                   int
	src, dst, dcontext, clid               string
	channel, dstchannel, lastapp, lastdata string
	start, answer, end                     time.Time
	duration, billsec                      int64
	disposition                            string
	uniqueid, linkedid                     string
	sequence                               int64
}

var uniqueIDRE = regexp.MustCompile(`^([A-Za-z0-9_.]+-)?[0-9]+\.[0-9]+$`)

// parseCDR reads one CSV record; a nil row with a nil error is a header.
func parseCDR(line int, f []string, loc *time.Location) (*cdrRow, error) {
	n := len(f)
	if n > 0 && strings.EqualFold(strings.TrimSpace(f[0]), "accountcode") && line == 1 {
		return nil, nil
	}
	if n < 16 || n > 21 {
		return nil, fmt.Errorf("%d columns; cdr_csv writes 16 to 21", n)
	}
	r := &cdrRow{line: line, src: f[1], dst: f[2], dcontext: f[3], clid: f[4], channel: f[5], dstchannel: f[6],
		lastapp: f[7], lastdata: f[8], disposition: strings.ToUpper(strings.TrimSpace(f[14]))}
	var err error
	if r.start, err = cdrTime(f[9], loc); err != nil || r.start.IsZero() {
		return nil, fmt.Errorf("start %q is not a time YYYY-MM-DD HH:MM:SS", f[9])
	}
	if r.answer, err = cdrTime(f[10], loc); err != nil {
		return nil, fmt.Errorf("answer %q is not a time YYYY-MM-DD HH:MM:SS", f[10])
	}
	if r.end, err = cdrTime(f[11], loc); err != nil || r.end.IsZero() {
		return nil, fmt.Errorf("end %q is not a time YYYY-MM-DD HH:MM:SS", f[11])
	}
	if r.duration, err = strconv.ParseInt(strings.TrimSpace(f[12]), 10, 64); err != nil || r.duration < 0 {
		return nil, fmt.Errorf("duration %q is not a number of seconds", f[12])
	}
	if r.billsec, err = strconv.ParseInt(strings.TrimSpace(f[13]), 10, 64); err != nil || r.billsec < 0 {
		return nil, fmt.Errorf("billsec %q is not a number of seconds", f[13])
	}
	looksUnique := func(s string) bool { return uniqueIDRE.MatchString(s) }
	switch n {
	case 16:
	case 17: // uniqueid or userfield: only one of them is on
		if looksUnique(f[16]) {
			r.uniqueid = f[16]
		}
	case 18:
		r.uniqueid = f[16]
	case 19: // peeraccount, linkedid, sequence only
		r.linkedid = f[17]
	case 20:
		if looksUnique(f[16]) {
			r.uniqueid = f[16]
		}
		r.linkedid = f[18]
	case 21:
		r.uniqueid, r.linkedid = f[16], f[19]
	}
	if n >= 19 {
		if r.sequence, err = strconv.ParseInt(strings.TrimSpace(f[n-1]), 10, 64); err != nil {
			return nil, fmt.Errorf("sequence %q is not a number", f[n-1])
		}
		if r.uniqueid == "" && r.linkedid != "" {
			r.uniqueid = r.linkedid + "-" + strconv.FormatInt(r.sequence, 10)
		}
	}
	if r.uniqueid == "" {
		return nil, errors.New("no uniqueid column: set loguniqueid=yes (or newcdrcolumns=yes) in cdr.conf's [csv] section")
	}
	return r, nil
}

func cdrTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
	return t.UTC(), err
}

// cdrGroup is the rows of one call being gathered.
type cdrGroup struct {
	rows    []*cdrRow
	keys    []string
	lastEnd time.Time
	// merged marks a group whose rows moved into another: it stays in the
	// open list until the next flush drops it, since removing it at once
	// would be a scan of the open list per merge.
	merged bool
}

// ReadAsteriskCSV reads an Asterisk Master.csv and feeds its calls to b.
// Rows that cannot be read, and calls that cannot be built, are skipped with
// the reason, at the line of their first row.
func ReadAsteriskCSV(r io.Reader, opts AsteriskOptions, b *Batch) error {
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.ExtensionDigits == 0 {
		opts.ExtensionDigits = 6
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	var (
		open      []*cdrGroup
		byKey     = map[string]*cdrGroup{}
		latestEnd time.Time
		flushedAt time.Time
	)
	flush := func(all bool) {
		keep := open[:0]
		for _, g := range open {
			if g.merged {
				continue
			}
			if !all && latestEnd.Sub(g.lastEnd) < groupWindow {
				keep = append(keep, g)
				continue
			}
			for _, k := range g.keys {
				if byKey[k] == g {
					delete(byKey, k)
				}
			}
			b.addCDRCall(g.rows, opts)
		}
		clear(open[len(keep):])
		open = keep
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				b.Skip(pe.Line, "", "unreadable CSV: "+pe.Err.Error())
				continue
			}
			return err
		}
		row, err := parseCDR(line, rec, opts.Location)
		if err != nil {
			id := ""
			if len(rec) > 16 && uniqueIDRE.MatchString(rec[16]) {
				id = rec[16]
			}
			b.Skip(line, id, "row "+err.Error())
			continue
		}
		if row == nil {
			continue
		}
		// Rows joining one call: the same linkedid, or a shared channel.
		var keys []string
		if row.linkedid != "" {
			keys = []string{"L" + row.linkedid}
		} else {
			for _, ch := range []string{row.channel, row.dstchannel} {
				if ch != "" {
					keys = append(keys, "C"+ch)
				}
			}
			keys = append(keys, "U"+row.uniqueid)
		}
		var g *cdrGroup
		for _, k := range keys {
			other := byKey[k]
			if other == nil || other == g {
				continue
			}
			if g == nil {
				g = other
				continue
			}
			// The row links two groups: merge the smaller into the larger,
			// so that no row is copied more than a logarithmic number of times.
			if len(other.rows) > len(g.rows) {
				g, other = other, g
			}
			g.rows = append(g.rows, other.rows...)
			g.lastEnd = maxTime(g.lastEnd, other.lastEnd)
			for _, k2 := range other.keys {
				if byKey[k2] == other {
					byKey[k2] = g
					g.keys = append(g.keys, k2)
				}
			}
			other.rows, other.keys, other.merged = nil, nil, true
		}
		if g == nil {
			g = &cdrGroup{}
			open = append(open, g)
		}
		g.rows = append(g.rows, row)
		g.lastEnd = maxTime(g.lastEnd, row.end)
		for _, k := range keys {
			if byKey[k] != g {
				byKey[k] = g
				g.keys = append(g.keys, k)
			}
		}
		latestEnd = maxTime(latestEnd, row.end)
		// Closing calls every minute of the file's time keeps the work per
		// row small however many calls are open.
		if latestEnd.Sub(flushedAt) >= time.Minute {
			flushedAt = latestEnd
			flush(false)
		}
	}
	flush(true)
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// clidRE reads Asterisk's caller id: "Name" <number>, or a bare number.
var clidRE = regexp.MustCompile(`^\s*"?([^"<]*?)"?\s*<([^>]*)>\s*$`)

// channelExt is the endpoint of a channel name such as PJSIP/101-0000002a.
var channelExt = regexp.MustCompile(`^[A-Za-z0-9]+/([^-@/]+)`)

// addCDRCall builds one call from its rows and queues it.
func (b *Batch) addCDRCall(rows []*cdrRow, opts AsteriskOptions) {
	slices.SortStableFunc(rows, func(x, y *cdrRow) int {
		if c := x.start.Compare(y.start); c != 0 {
			return c
		}
		if c := int(x.sequence - y.sequence); c != 0 {
			return c
		}
		return x.line - y.line
	})
	rows = dropRepeats(rows)
	first := rows[0]
	line := first.line
	for _, r := range rows {
		line = min(line, r.line)
	}
	rawID := first.linkedid
	if rawID == "" {
		rawID = first.uniqueid
	}
	id := rawID
	if i := strings.LastIndex(id, "-"); i >= 0 { // a systemname prefix
		id = id[i+1:]
	}
	if _, _, ok := domain.ParseCallID(id); !ok {
		b.Skip(line, rawID, fmt.Sprintf("call id %q is not unixtime.sequence", rawID))
		return
	}
	isExt := func(s string) bool {
		return s != "" && len(s) <= opts.ExtensionDigits && strings.Trim(s, "0123456789*#") == ""
	}
	rec := recordJSON{ID: id, CallerNumber: first.src, CalledNumber: first.dst, DialledNumber: first.dst}
	if m := clidRE.FindStringSubmatch(first.clid); m != nil {
		rec.CallerName = strings.TrimSpace(m[1])
		if rec.CallerNumber == "" {
			rec.CallerNumber = m[2]
		}
	}
	if rec.CallerName == rec.CallerNumber {
		rec.CallerName = ""
	}
	if isExt(first.src) {
		rec.Direction, rec.CallerType = domain.CallOutbound, "user"
	} else {
		rec.Direction, rec.CallerType = domain.CallInbound, "external"
	}
	if isExt(first.dst) {
		rec.CalledType = "user"
	} else {
		rec.CalledType = "external"
	}
	start, end := first.start, first.end
	var talk int64
	var firstAnswer time.Time
	answeredBy := map[string]bool{} // the people who answered, by endpoint
	voicemail := false
	seen := map[string]int{}
	exts := map[string]bool{}
	queues := map[string]bool{}
	for _, r := range rows {
		seen[r.uniqueid]++
	}
	dup := map[string]int{}
	var prevCallID string
	for _, r := range rows {
		end = maxTime(end, r.end)
		if r.disposition == "ANSWERED" && !r.answer.IsZero() {
			if strings.EqualFold(r.lastapp, "VoiceMail") {
				voicemail = true
			} else {
				to := r.dst
				if m := channelExt.FindStringSubmatch(r.dstchannel); m != nil {
					to = m[1]
				}
				answeredBy[to] = true
				talk += r.billsec
			}
			if firstAnswer.IsZero() || r.answer.Before(firstAnswer) {
				firstAnswer = r.answer
			}
		}
		if strings.EqualFold(r.lastapp, "Queue") {
			if q, _, _ := strings.Cut(r.lastdata, ","); strings.TrimSpace(q) != "" && !queues[strings.TrimSpace(q)] {
				queues[strings.TrimSpace(q)] = true
				rec.Queues = append(rec.Queues, strings.TrimSpace(q))
			}
		}
		for _, s := range []string{r.src, r.dst} {
			if isExt(s) && s != "s" {
				exts[s] = true
			}
		}
		for _, ch := range []string{r.channel, r.dstchannel} {
			if m := channelExt.FindStringSubmatch(ch); m != nil && isExt(m[1]) {
				exts[m[1]] = true
			}
		}
		uid := r.uniqueid
		if seen[uid] > 1 {
			dup[uid]++
			uid = fmt.Sprintf("%s-%d", uid, dup[uid])
		}
		if i := strings.LastIndex(uid, "-"); i >= 0 && !validUniqueID(uid) {
			uid = uid[i+1:]
		}
		from, to := r.src, r.dst
		if m := channelExt.FindStringSubmatch(r.channel); m != nil && isExt(m[1]) {
			from = m[1]
		}
		if m := channelExt.FindStringSubmatch(r.dstchannel); m != nil && isExt(m[1]) {
			to = m[1]
		}
		st, en := r.start.Format(time.RFC3339), r.end.Format(time.RFC3339)
		dur, bill := r.duration, r.billsec
		leg := legJSON{UniqueID: uid, CallID: r.uniqueid, StartTime: st, EndTime: &en, DurationSeconds: &dur, TalkTimeSeconds: &bill, From: from, To: to}
		if prevCallID != "" && prevCallID != r.uniqueid {
			leg.BridgedFromCallID = prevCallID
		}
		prevCallID = r.uniqueid
		rec.Legs = append(rec.Legs, leg)
	}
	users := map[string]bool{}
	for e := range exts {
		rec.Extensions = append(rec.Extensions, e)
		if u, ok := opts.Users[e]; ok && !users[u] {
			users[u] = true
			rec.Users = append(rec.Users, u)
		}
	}
	slices.Sort(rec.Extensions)
	slices.Sort(rec.Users)
	// The account number involved: the DID an inbound call dialled.
	if rec.Direction == domain.CallInbound {
		if n, ok := phone.Normalize(first.dst); ok && !isExt(first.dst) {
			rec.Numbers = []string{n}
		}
	}
	var code int64
	switch {
	case len(answeredBy) > 0:
		rec.Status, code = domain.CallAnswered, int64(len(answeredBy))
	case voicemail:
		rec.Status, code = domain.CallVoicemail, 0
	default:
		rec.Status, code = domain.CallMissed, -1
		rec.Abandoned = rec.Direction == domain.CallInbound && first.disposition == "NO ANSWER"
	}
	rec.StatusCode = &code
	dur := int64(end.Sub(start) / time.Second)
	wait := dur
	if !firstAnswer.IsZero() {
		wait = int64(firstAnswer.Sub(start) / time.Second)
	}
	// Each person beyond the first who answered took a transfer.
	transferred := int64(max(0, len(answeredBy)-1))
	rec.StartTime, rec.DurationSeconds, rec.TalkTimeSeconds, rec.WaitTimeSeconds, rec.Transferred =
		start.Format(time.RFC3339), &dur, &talk, &wait, &transferred
	e := end.Format(time.RFC3339)
	rec.EndTime = &e
	call, err := rec.record(b.account)
	if err != nil {
		var de *domain.Error
		errors.As(err, &de)
		b.Skip(line, id, de.Message)
		return
	}
	b.work <- batchItem{line: line, id: id, it: &Item{Call: call}}
}

// dropRepeats keeps the first of rows that agree in every column read
// (all but their line): a CDR written twice is one leg, not two legs with
// one uniqueid and twice the talk time. Rows of one channel that differ
// (several dial attempts) stay separate legs.
func dropRepeats(rows []*cdrRow) []*cdrRow {
	seen := make(map[cdrRow]bool, len(rows))
	out := rows[:0]
	for _, r := range rows {
		k := *r
		k.line = 0
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	return out
}
