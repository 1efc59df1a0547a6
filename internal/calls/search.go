package calls

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/domain"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// Search limits.
const (
	DefaultLimit = 50
	MaxLimit     = 500
	MaxWindow    = 366 * 24 * time.Hour
	// MaxFilterValues bounds every list in filters: with each list at its
	// maximum a search's statement stays near 2,600 bind variables, far
	// under SQLite's 32,766 and PostgreSQL's 65,535 (docs/decisions.md), and
	// checking a body is a bounded amount of work.
	MaxFilterValues = 100
	// MaxTagLength bounds, in characters, one entry of numbers, extensions,
	// queues, huntgroups and users (and their excludes), as ingest does.
	MaxTagLength = 128
	// MaxVocabularyLength bounds, in characters, one entry of callPurpose
	// and callSentiment and filters.search: ingest stores at most 256 bytes
	// of each of those texts, so no longer value could match.
	MaxVocabularyLength = 256
)

// SearchParams is POST /calls/search's body, typed. Nil pointers and slices
// are fields the client left out.
type SearchParams struct {
	Start, End *int64
	TimeZone   string
	Limit      *int
	Offset     *int
	Direction  string
	Filters    Filters
	SortField  string
	SortDir    string
}

// Filters are the search's filters; see SearchParams.
type Filters struct {
	Numbers, NumbersExclude       []string
	Extensions, ExtensionsExclude []string
	Queues, QueuesExclude         []string
	Huntgroups, HuntgroupsExclude []string
	Users                         []string
	Directions                    []string
	Statuses                      []string
	Search                        string
	Duration, TalkTime, WaitTime  *Bounds
	TimeOfDay                     *Bounds
	CallPurpose, CallSentiment    []string
	DaysOfWeek                    []string
	DaysOfMonth                   []int
}

// Bounds is a {start, end} pair of strings; either may be empty (open).
type Bounds struct{ Start, End string }

// SearchResult is one page of a search.
type SearchResult struct {
	Total  int64
	Limit  int
	Offset int
	Calls  []domain.Call
}

func invalid(format string, args ...any) error {
	return domain.Errorf(domain.Invalid, format, args...)
}

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// query validates p and turns it into the store's query. Every error names
// the field at fault.
func (p SearchParams) query(accountID int64) (store.CallQuery, int, error) {
	q := store.CallQuery{AccountID: accountID, Limit: DefaultLimit}
	if p.Start == nil {
		return q, 0, invalid("start is required (unix seconds)")
	}
	if p.End == nil {
		return q, 0, invalid("end is required (unix seconds)")
	}
	start, end := *p.Start, *p.End
	const maxUnix = 253402300799 // 9999-12-31T23:59:59Z
	if start < 0 || start > maxUnix {
		return q, 0, invalid("start must be unix seconds between 0 and %d", maxUnix)
	}
	if end < 0 || end > maxUnix {
		return q, 0, invalid("end must be unix seconds between 0 and %d", maxUnix)
	}
	if end <= start {
		return q, 0, invalid("end must be after start")
	}
	if end-start > int64(MaxWindow/time.Second) {
		return q, 0, invalid("end must be at most 366 days after start")
	}
	q.Start, q.End = start*1e6, end*1e6
	loc := time.UTC
	if p.TimeZone != "" {
		var err error
		if p.TimeZone == "Local" {
			err = fmt.Errorf("not an IANA zone")
		} else {
			loc, err = time.LoadLocation(p.TimeZone)
		}
		if err != nil {
			return q, 0, invalid("timeZone: %q is not an IANA time zone name", p.TimeZone)
		}
	}
	if p.Limit != nil {
		if *p.Limit < 1 {
			return q, 0, invalid("limit must be at least 1")
		}
		q.Limit = min(*p.Limit, MaxLimit)
	}
	if p.Offset != nil {
		if *p.Offset < 0 {
			return q, 0, invalid("offset must not be negative")
		}
		q.Offset = *p.Offset
	}
	f := p.Filters
	if err := f.checkSizes(); err != nil {
		return q, 0, err
	}
	switch p.Direction {
	case "":
	case domain.CallInbound, domain.CallOutbound:
		q.Directions = []string{p.Direction}
	default:
		return q, 0, invalid("direction must be inbound or outbound, not %q", p.Direction)
	}
	if len(f.Directions) > 0 {
		for i, d := range f.Directions {
			if d != domain.CallInbound && d != domain.CallOutbound {
				return q, 0, invalid("filters.directions[%d] must be inbound or outbound, not %s", i, quote(d))
			}
		}
		if q.Directions == nil {
			q.Directions = dedupe(f.Directions)
		} else if !slices.Contains(f.Directions, p.Direction) {
			q.Directions = []string{}
		}
	}
	if len(f.Statuses) > 0 {
		for i, s := range f.Statuses {
			if s != domain.CallAnswered && s != domain.CallMissed && s != domain.CallVoicemail {
				return q, 0, invalid("filters.statuses[%d] must be answered, missed or voicemail, not %s", i, quote(s))
			}
		}
		q.Statuses = dedupe(f.Statuses)
	}
	q.Include, q.Exclude = map[string][]string{}, map[string][]string{}
	for _, t := range []struct {
		name string
		kind string
		vals []string
		into map[string][]string
	}{
		{"numbers", domain.TagNumber, f.Numbers, q.Include}, {"numbersExclude", domain.TagNumber, f.NumbersExclude, q.Exclude},
		{"extensions", domain.TagExtension, f.Extensions, q.Include}, {"extensionsExclude", domain.TagExtension, f.ExtensionsExclude, q.Exclude},
		{"queues", domain.TagQueue, f.Queues, q.Include}, {"queuesExclude", domain.TagQueue, f.QueuesExclude, q.Exclude},
		{"huntgroups", domain.TagHuntgroup, f.Huntgroups, q.Include}, {"huntgroupsExclude", domain.TagHuntgroup, f.HuntgroupsExclude, q.Exclude},
		{"users", domain.TagUser, f.Users, q.Include},
	} {
		if len(t.vals) == 0 {
			continue
		}
		vals := make([]string, len(t.vals))
		for i, v := range t.vals {
			nv, err := tagValue(t.kind, v)
			if err != nil {
				return q, 0, invalid("filters.%s[%d]: %v", t.name, i, err)
			}
			vals[i] = nv
		}
		t.into[t.kind] = dedupe(vals)
	}
	if s := strings.TrimSpace(f.Search); s != "" {
		q.Search = strings.ToLower(s)
	}
	for _, r := range []struct {
		name string
		b    *Bounds
		into *store.Range
	}{{"duration", f.Duration, &q.Duration}, {"talkTime", f.TalkTime, &q.TalkTime}, {"waitTime", f.WaitTime, &q.WaitTime}} {
		if r.b == nil {
			continue
		}
		var err error
		if r.into.Min, err = seconds(r.b.Start); err != nil {
			return q, 0, invalid("filters.%s.start: %v", r.name, err)
		}
		if r.into.Max, err = seconds(r.b.End); err != nil {
			return q, 0, invalid("filters.%s.end: %v", r.name, err)
		}
		if r.into.Min != nil && r.into.Max != nil && *r.into.Min > *r.into.Max {
			return q, 0, invalid("filters.%s.start must not be after its end", r.name)
		}
	}
	if len(f.CallPurpose) > 0 {
		q.Purposes = dedupe(f.CallPurpose)
	}
	if len(f.CallSentiment) > 0 {
		q.Sentiments = dedupe(f.CallSentiment)
	}
	var days dayFilter
	if len(f.DaysOfWeek) > 0 {
		days.weekdays = map[time.Weekday]bool{}
		for i, d := range f.DaysOfWeek {
			wd, ok := weekdays[d]
			if !ok {
				return q, 0, invalid("filters.daysOfWeek[%d] must be one of mon, tue, wed, thu, fri, sat, sun, not %s", i, quote(d))
			}
			days.weekdays[wd] = true
		}
	}
	if len(f.DaysOfMonth) > 0 {
		days.monthDays = map[int]bool{}
		for i, d := range f.DaysOfMonth {
			if d < 1 || d > 31 {
				return q, 0, invalid("filters.daysOfMonth[%d] must be between 1 and 31, not %d", i, d)
			}
			days.monthDays[d] = true
		}
	}
	if f.TimeOfDay != nil {
		from, to := 0, 24*3600
		var err error
		if f.TimeOfDay.Start != "" {
			if from, err = clock(f.TimeOfDay.Start); err != nil {
				return q, 0, invalid("filters.timeOfDay.start: %v", err)
			}
		}
		if f.TimeOfDay.End != "" {
			if to, err = clock(f.TimeOfDay.End); err != nil {
				return q, 0, invalid("filters.timeOfDay.end: %v", err)
			}
		}
		if from == to {
			return q, 0, invalid("filters.timeOfDay: start and end are equal, which selects no time")
		}
		if from < to {
			days.times = [][2]int64{{int64(from), int64(to)}}
		} else { // across midnight
			days.times = [][2]int64{{0, int64(to)}, {int64(from), 24 * 3600}}
		}
	}
	if days.weekdays != nil || days.monthDays != nil || days.times != nil {
		q.Intervals = days.intervals(start, end, loc)
	}
	q.Sort = p.SortField
	if q.Sort != "" && !store.SortableCallField(q.Sort) {
		return q, 0, invalid("sort.field: %q is not a Call field", q.Sort)
	}
	switch p.SortDir {
	case "", "desc":
	case "asc":
		q.Asc = true
	default:
		return q, 0, invalid("sort.direction must be asc or desc, not %q", p.SortDir)
	}
	return q, q.Limit, nil
}

// checkSizes refuses a list longer than MaxFilterValues, and an entry or
// a search longer than its limit or with a control character (PostgreSQL
// refuses a NUL in text; ingest stores none of them), before any per-entry
// work.
func (f *Filters) checkSizes() error {
	for _, l := range []struct {
		name string
		n    int
	}{
		{"numbers", len(f.Numbers)}, {"numbersExclude", len(f.NumbersExclude)},
		{"extensions", len(f.Extensions)}, {"extensionsExclude", len(f.ExtensionsExclude)},
		{"queues", len(f.Queues)}, {"queuesExclude", len(f.QueuesExclude)},
		{"huntgroups", len(f.Huntgroups)}, {"huntgroupsExclude", len(f.HuntgroupsExclude)},
		{"users", len(f.Users)}, {"directions", len(f.Directions)}, {"statuses", len(f.Statuses)},
		{"callPurpose", len(f.CallPurpose)}, {"callSentiment", len(f.CallSentiment)},
		{"daysOfWeek", len(f.DaysOfWeek)}, {"daysOfMonth", len(f.DaysOfMonth)},
	} {
		if l.n > MaxFilterValues {
			return invalid("filters.%s has %d entries; at most %d are allowed", l.name, l.n, MaxFilterValues)
		}
	}
	for _, l := range []struct {
		name string
		vals []string
	}{{"callPurpose", f.CallPurpose}, {"callSentiment", f.CallSentiment}} {
		for i, v := range l.vals {
			if utf8.RuneCountInString(v) > MaxVocabularyLength {
				return invalid("filters.%s[%d] is longer than %d characters", l.name, i, MaxVocabularyLength)
			}
			if hasControl(v) {
				return invalid("filters.%s[%d] has a control character", l.name, i)
			}
		}
	}
	search := strings.TrimSpace(f.Search)
	if utf8.RuneCountInString(search) > MaxVocabularyLength {
		return invalid("filters.search is longer than %d characters", MaxVocabularyLength)
	}
	if hasControl(search) {
		return invalid("filters.search has a control character")
	}
	return nil
}

// hasControl reports whether s has a C0 control character or DEL: no
// stored text has one (ingest refuses them), and PostgreSQL refuses a NUL.
func hasControl(s string) bool {
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// quote is %q of a value echoed in an error, cut short: a client's
// mistake should not come back a megabyte long.
func quote(s string) string {
	const most = 64
	if utf8.RuneCountInString(s) <= most {
		return strconv.Quote(s)
	}
	r := []rune(s)
	return strconv.Quote(string(r[:most])) + "…"
}

// tagValue checks and normalizes a value of a multi-valued field (search
// filters and ingest alike). No entry is longer than MaxTagLength
// characters, whatever its kind: phone.Normalize would take any number of
// digits.
func tagValue(kind, v string) (string, error) {
	if utf8.RuneCountInString(strings.TrimSpace(v)) > MaxTagLength {
		return "", fmt.Errorf("is longer than %d characters", MaxTagLength)
	}
	switch kind {
	case domain.TagNumber:
		n, ok := phone.Normalize(v)
		if !ok {
			return "", fmt.Errorf("%q is not a phone number", v)
		}
		return n, nil
	case domain.TagUser:
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 || strconv.FormatInt(n, 10) != v {
			return "", fmt.Errorf("%q is not a user id (digits, as in GET /users)", v)
		}
		return v, nil
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return "", fmt.Errorf("must be 1 to %d characters", MaxTagLength)
	}
	if hasControl(v) {
		return "", fmt.Errorf("has a control character")
	}
	return v, nil
}

// seconds reads an optional bound in whole seconds.
func seconds(s string) (*int64, error) {
	if s == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%q is not a whole number of seconds", s)
	}
	return &n, nil
}

// clock reads HH:MM as seconds after midnight.
func clock(s string) (int, error) {
	if len(s) != 5 || s[2] != ':' {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	h, err1 := strconv.Atoi(s[:2])
	m, err2 := strconv.Atoi(s[3:])
	if err1 != nil || err2 != nil || h < 0 || h > 23 || m < 0 || m > 59 || s[0] == '+' || s[3] == '+' || s[0] == '-' || s[3] == '-' {
		return 0, fmt.Errorf("%q is not a time of day HH:MM (00:00 to 23:59)", s)
	}
	return h*3600 + m*60, nil
}

// dedupe drops repeated values, keeping the first of each, in one pass
// with a set (lists come from clients: a scan per value would be quadratic).
func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]struct{}, len(in))
	for _, v := range in {
		if _, ok := seen[v]; !ok {
			seen[v] = struct{}{}
			out = append(out, v)
		}
	}
	return out
}

// dayFilter selects instants by their local date and wall-clock time.
type dayFilter struct {
	weekdays  map[time.Weekday]bool // nil: any
	monthDays map[int]bool          // nil: any
	times     [][2]int64            // seconds after local midnight, [from, to); nil: all day
}

// intervals returns, as unix-microsecond [from, to) ranges in order, the
// instants of [start, end) (unix seconds) whose local date and time in loc
// pass f. The window is walked one UTC-offset period at a time: within one,
// local time is UTC time plus a constant, so days and times of day map to
// instants exactly, on both sides of every daylight-saving change.
func (f dayFilter) intervals(start, end int64, loc *time.Location) [][2]int64 {
	out := [][2]int64{}
	add := func(from, to int64) {
		if n := len(out); n > 0 && out[n-1][1] >= from*1e6 {
			out[n-1][1] = max(out[n-1][1], to*1e6)
			return
		}
		out = append(out, [2]int64{from * 1e6, to * 1e6})
	}
	times := f.times
	if times == nil {
		times = [][2]int64{{0, 24 * 3600}}
	}
	for t := start; t < end; {
		at := time.Unix(t, 0).In(loc)
		_, off := at.Zone()
		segEnd := end
		if _, zoneEnd := at.ZoneBounds(); !zoneEnd.IsZero() && zoneEnd.Unix() < segEnd {
			segEnd = zoneEnd.Unix()
		}
		ls, le := t+int64(off), segEnd+int64(off) // local "wall" seconds
		for day := floorDiv(ls, 86400) * 86400; day < le; day += 86400 {
			date := time.Unix(day, 0).UTC()
			if f.weekdays != nil && !f.weekdays[date.Weekday()] {
				continue
			}
			if f.monthDays != nil && !f.monthDays[date.Day()] {
				continue
			}
			for _, tr := range times {
				lo, hi := max(day+tr[0], ls), min(day+tr[1], le)
				if lo < hi {
					add(lo-int64(off), hi-int64(off))
				}
			}
		}
		t = segEnd
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
