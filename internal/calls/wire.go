package calls

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/domain"
)

// The ingest format: one call is one JSON object with the public API's Call
// fields (same names and types) plus what the filters need, its legs and
// their transcripts. A real-time event is an object with an "event" field.
// JSON Lines carry one object per line.

type recordJSON struct {
	ID               string  `json:"id"`
	Direction        string  `json:"direction"`
	Status           string  `json:"status"`
	StatusCode       *int64  `json:"statusCode"`
	CallerType       string  `json:"callerType"`
	CalledType       string  `json:"calledType"`
	CallerName       string  `json:"callerName"`
	CallerNumber     string  `json:"callerNumber"`
	CalledName       string  `json:"calledName"`
	CalledNumber     string  `json:"calledNumber"`
	DialledNumber    string  `json:"dialledNumber"`
	CallerIDInternal string  `json:"callerIdInternal"`
	CallerIDExternal string  `json:"callerIdExternal"`
	StartTime        string  `json:"startTime"`
	EndTime          *string `json:"endTime"`
	DurationSeconds  *int64  `json:"durationSeconds"`
	TalkTimeSeconds  *int64  `json:"talkTimeSeconds"`
	WaitTimeSeconds  *int64  `json:"waitTimeSeconds"`
	Transferred      *int64  `json:"transferred"`
	Abandoned        bool    `json:"abandoned"`
	Recorded         bool    `json:"recorded"`
	// Derived by Switchboard from the stored calls; accepted and ignored.
	CalledBack    *string `json:"calledBack"`
	Repeated      *int64  `json:"repeated"`
	CallPurpose   string  `json:"callPurpose"`
	CallSentiment string  `json:"callSentiment"`

	Numbers     []string         `json:"numbers"`
	Extensions  []string         `json:"extensions"`
	Queues      []string         `json:"queues"`
	Huntgroups  []string         `json:"huntgroups"`
	Users       []string         `json:"users"`
	Legs        []legJSON        `json:"legs"`
	Transcripts []transcriptJSON `json:"transcripts"`
}

type legJSON struct {
	UniqueID          string         `json:"uniqueId"`
	CallID            string         `json:"callId"`
	BridgedFromCallID string         `json:"bridgedFromCallId"`
	StartTime         string         `json:"startTime"`
	EndTime           *string        `json:"endTime"`
	DurationSeconds   *int64         `json:"durationSeconds"`
	TalkTimeSeconds   *int64         `json:"talkTimeSeconds"`
	From              string         `json:"from"`
	To                string         `json:"to"`
	Recording         *recordingJSON `json:"recording"`
}

type recordingJSON struct {
	ContentType string `json:"contentType"`
	Content     string `json:"content"`
}

type transcriptJSON struct {
	UniqueID string                     `json:"uniqueId"`
	Language string                     `json:"language"`
	Segments []domain.TranscriptSegment `json:"segments"`
}

// eventJSON is a real-time call event.
type eventJSON struct {
	Event        string   `json:"event"`
	ID           string   `json:"id"`
	Direction    string   `json:"direction"`
	CallerNumber string   `json:"callerNumber"`
	CalledNumber string   `json:"calledNumber"`
	StartTime    string   `json:"startTime"`
	Users        []string `json:"users"`
}

// Limits of the ingest format. Every list a line carries is bounded, so a
// line's cost (and the events it writes) is bounded whatever its size.
const (
	MaxRecordingBytes = 64 << 20
	maxText           = 256
	// MaxTagValues bounds each of a call's numbers, extensions, queues,
	// huntgroups and users, and an event's users. Each of a call's users
	// is one UserEndedCalls event carrying the list, so a call writes at
	// most 1 + MaxTagValues + MaxTranscripts events.
	MaxTagValues = 100
	// MaxLegs bounds a call's legs; MaxTranscripts its transcripts (one per
	// leg and language); MaxSegments one transcript's segments.
	MaxLegs        = 1000
	MaxTranscripts = 1000
	MaxSegments    = 100_000
)

// checkCount is the error for a list longer than most, naming the field.
func checkCount(field string, n, most int) error {
	if n > most {
		return invalid("%s has %d entries; at most %d are allowed", field, n, most)
	}
	return nil
}

// recordingTypes are the audio types a recording may have, with the file
// extension its blob gets.
var recordingTypes = map[string]string{
	"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/ogg": "ogg",
	"audio/webm": "webm", "audio/mp4": "m4a", "audio/aac": "aac", "audio/flac": "flac", "audio/basic": "au",
}

var languageRE = regexp.MustCompile(`^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$`)

// Item is one parsed ingest object: a call, or a real-time event.
type Item struct {
	Call  *domain.CallRecord
	Event *domain.CallEvent
	Users []string // the event's users
}

// Parse decodes and validates one ingest object. Errors name the field.
func Parse(accountID int64, raw []byte) (*Item, error) {
	if !utf8.Valid(raw) {
		return nil, invalid("not valid UTF-8")
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, jsonError(err)
	}
	if _, ok := probe["event"]; ok {
		var e eventJSON
		if err := strictDecode(raw, &e); err != nil {
			return nil, err
		}
		return parseEvent(e)
	}
	var r recordJSON
	if err := strictDecode(raw, &r); err != nil {
		return nil, err
	}
	rec, err := r.record(accountID)
	if err != nil {
		return nil, err
	}
	return &Item{Call: rec}, nil
}

func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return invalid("trailing data after the JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return invalid("want a JSON object, not %s", te.Value)
		}
		return invalid("%s must be %s, not %s", te.Field, jsonType(te.Type.Kind().String()), te.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return invalid("%s", msg)
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "int64", "int":
		return "an integer"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "ptr":
		return "an object"
	}
	return kind
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, invalid("%s is required (RFC 3339)", field)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, invalid("%s: %q is not an RFC 3339 time", field, s)
	}
	return t.UTC(), nil
}

func nonNegative(field string, v *int64) (int64, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 {
		return 0, invalid("%s must not be negative", field)
	}
	return *v, nil
}

func text(field, s string) (string, error) {
	if len(s) > maxText {
		return "", invalid("%s is longer than %d bytes", field, maxText)
	}
	if hasControl(s) {
		return "", invalid("%s has a control character", field)
	}
	return s, nil
}

var partyTypes = []string{"", "external", "user", "queue", "huntgroup"}

// checkCounts refuses a record with a list over its limit, before any
// per-entry work.
func (r *recordJSON) checkCounts() error {
	for _, l := range []struct {
		name    string
		n, most int
	}{
		{"numbers", len(r.Numbers), MaxTagValues}, {"extensions", len(r.Extensions), MaxTagValues},
		{"queues", len(r.Queues), MaxTagValues}, {"huntgroups", len(r.Huntgroups), MaxTagValues},
		{"users", len(r.Users), MaxTagValues}, {"legs", len(r.Legs), MaxLegs}, {"transcripts", len(r.Transcripts), MaxTranscripts},
	} {
		if err := checkCount(l.name, l.n, l.most); err != nil {
			return err
		}
	}
	for i, t := range r.Transcripts {
		if err := checkCount(fmt.Sprintf("transcripts[%d].segments", i), len(t.Segments), MaxSegments); err != nil {
			return err
		}
	}
	return nil
}

func (r *recordJSON) record(accountID int64) (*domain.CallRecord, error) {
	c := domain.Call{AccountID: accountID, ID: r.ID}
	if err := r.checkCounts(); err != nil {
		return nil, err
	}
	if r.ID == "" {
		return nil, invalid("id is required (%s)", domain.CallIDShape)
	}
	if _, _, ok := domain.ParseCallID(r.ID); !ok {
		return nil, invalid("id %q: want %s, without leading zeros", r.ID, domain.CallIDShape)
	}
	switch r.Direction {
	case domain.CallInbound, domain.CallOutbound:
		c.Direction = r.Direction
	case "":
		return nil, invalid("direction is required (inbound or outbound)")
	default:
		return nil, invalid("direction must be inbound or outbound, not %q", r.Direction)
	}
	switch r.Status {
	case "":
		if r.StatusCode == nil {
			return nil, invalid("status is required (answered, missed, voicemail or unknown)")
		}
		c.Status, c.StatusCode = domain.StatusForCode(*r.StatusCode), *r.StatusCode
	case domain.CallAnswered, domain.CallMissed, domain.CallVoicemail:
		c.Status = r.Status
		switch {
		case r.StatusCode == nil:
			c.StatusCode = map[string]int64{domain.CallAnswered: 1, domain.CallMissed: -1, domain.CallVoicemail: 0}[r.Status]
		case domain.StatusForCode(*r.StatusCode) != r.Status:
			return nil, invalid("statusCode %d reports %s, but status is %s", *r.StatusCode, domain.StatusForCode(*r.StatusCode), r.Status)
		default:
			c.StatusCode = *r.StatusCode
		}
	case domain.CallUnknown:
		if r.StatusCode == nil {
			return nil, invalid("statusCode is required when status is unknown")
		}
		c.Status, c.StatusCode = r.Status, *r.StatusCode
	default:
		return nil, invalid("status must be answered, missed, voicemail or unknown, not %q", r.Status)
	}
	if !slices.Contains(partyTypes, r.CallerType) {
		return nil, invalid("callerType must be external, user, queue or huntgroup, not %q", r.CallerType)
	}
	if !slices.Contains(partyTypes, r.CalledType) {
		return nil, invalid("calledType must be external, user, queue or huntgroup, not %q", r.CalledType)
	}
	c.CallerType, c.CalledType = r.CallerType, r.CalledType
	var err error
	for _, f := range []struct {
		name string
		in   string
		out  *string
	}{
		{"callerName", r.CallerName, &c.CallerName}, {"callerNumber", r.CallerNumber, &c.CallerNumber},
		{"calledName", r.CalledName, &c.CalledName}, {"calledNumber", r.CalledNumber, &c.CalledNumber},
		{"dialledNumber", r.DialledNumber, &c.DialledNumber}, {"callerIdInternal", r.CallerIDInternal, &c.CallerIDInternal},
		{"callerIdExternal", r.CallerIDExternal, &c.CallerIDExternal}, {"callPurpose", r.CallPurpose, &c.CallPurpose},
		{"callSentiment", r.CallSentiment, &c.CallSentiment},
	} {
		if *f.out, err = text(f.name, strings.TrimSpace(f.in)); err != nil {
			return nil, err
		}
	}
	if c.StartTime, err = parseTime("startTime", r.StartTime); err != nil {
		return nil, err
	}
	if r.EndTime != nil {
		end, err := parseTime("endTime", *r.EndTime)
		if err != nil {
			return nil, err
		}
		if end.Before(c.StartTime) {
			return nil, invalid("endTime is before startTime")
		}
		c.EndTime = &end
	}
	for _, f := range []struct {
		name string
		in   *int64
		out  *int64
	}{
		{"durationSeconds", r.DurationSeconds, &c.DurationSeconds}, {"talkTimeSeconds", r.TalkTimeSeconds, &c.TalkTimeSeconds},
		{"waitTimeSeconds", r.WaitTimeSeconds, &c.WaitTimeSeconds}, {"transferred", r.Transferred, &c.Transferred},
	} {
		if *f.out, err = nonNegative(f.name, f.in); err != nil {
			return nil, err
		}
	}
	c.Abandoned, c.Recorded = r.Abandoned, r.Recorded
	for _, t := range []struct {
		name, kind string
		in         []string
		out        *[]string
	}{
		{"numbers", domain.TagNumber, r.Numbers, &c.Numbers}, {"extensions", domain.TagExtension, r.Extensions, &c.Extensions},
		{"queues", domain.TagQueue, r.Queues, &c.Queues}, {"huntgroups", domain.TagHuntgroup, r.Huntgroups, &c.Huntgroups},
		{"users", domain.TagUser, r.Users, &c.Users},
	} {
		for i, v := range t.in {
			nv, err := tagValue(t.kind, v)
			if err != nil {
				return nil, invalid("%s[%d]: %v", t.name, i, err)
			}
			*t.out = append(*t.out, nv)
		}
		*t.out = dedupe(*t.out)
	}
	rec := &domain.CallRecord{Call: c}
	seen := map[string]bool{}
	for i, l := range r.Legs {
		leg, err := l.leg(fmt.Sprintf("legs[%d]", i))
		if err != nil {
			return nil, err
		}
		if seen[leg.UniqueID] {
			return nil, invalid("legs[%d].uniqueId %q appears twice", i, leg.UniqueID)
		}
		seen[leg.UniqueID] = true
		if leg.Recording != nil {
			rec.Call.Recorded = true
		}
		rec.Legs = append(rec.Legs, leg)
	}
	langs := map[[2]string]bool{}
	for i, t := range r.Transcripts {
		field := fmt.Sprintf("transcripts[%d]", i)
		if !seen[t.UniqueID] {
			return nil, invalid("%s.uniqueId %q is not the uniqueId of one of the call's legs", field, t.UniqueID)
		}
		if !languageRE.MatchString(t.Language) {
			return nil, invalid("%s.language %q is not a language tag such as en or en-US", field, t.Language)
		}
		if langs[[2]string{t.UniqueID, t.Language}] {
			return nil, invalid("%s: a second %s transcript of leg %s", field, t.Language, t.UniqueID)
		}
		langs[[2]string{t.UniqueID, t.Language}] = true
		for j, sg := range t.Segments {
			sf := fmt.Sprintf("%s.segments[%d]", field, j)
			switch {
			case sg.StartMs < 0:
				return nil, invalid("%s.startMs must not be negative", sf)
			case sg.EndMs < sg.StartMs:
				return nil, invalid("%s.endMs is before its startMs", sf)
			case sg.Channel < 0:
				return nil, invalid("%s.channel must not be negative", sf)
			case len(sg.Text) > 64<<10:
				return nil, invalid("%s.text is longer than 64 KiB", sf)
			}
			if _, err := text(sf+".speaker", sg.Speaker); err != nil {
				return nil, err
			}
		}
		segs := t.Segments
		if segs == nil {
			segs = []domain.TranscriptSegment{}
		}
		rec.Transcripts = append(rec.Transcripts, domain.Transcript{UniqueID: t.UniqueID, Language: t.Language, Segments: segs})
	}
	return rec, nil
}

func (l *legJSON) leg(field string) (domain.CallLeg, error) {
	var leg domain.CallLeg
	if !validUniqueID(l.UniqueID) {
		return leg, invalid("%s.uniqueId must be 1 to 64 of A-Z a-z 0-9 . _ -, not %q", field, l.UniqueID)
	}
	leg.UniqueID = l.UniqueID
	if l.CallID == "" {
		return leg, invalid("%s.callId is required", field)
	}
	var err error
	for _, f := range []struct {
		name string
		in   string
		out  *string
	}{
		{"callId", l.CallID, &leg.CallID}, {"bridgedFromCallId", l.BridgedFromCallID, &leg.BridgedFromCallID},
		{"from", l.From, &leg.From}, {"to", l.To, &leg.To},
	} {
		if *f.out, err = text(field+"."+f.name, strings.TrimSpace(f.in)); err != nil {
			return leg, err
		}
	}
	if leg.StartTime, err = parseTime(field+".startTime", l.StartTime); err != nil {
		return leg, err
	}
	if l.EndTime != nil {
		end, err := parseTime(field+".endTime", *l.EndTime)
		if err != nil {
			return leg, err
		}
		if end.Before(leg.StartTime) {
			return leg, invalid("%s.endTime is before its startTime", field)
		}
		leg.EndTime = &end
	}
	if leg.DurationSeconds, err = nonNegative(field+".durationSeconds", l.DurationSeconds); err != nil {
		return leg, err
	}
	if leg.TalkTimeSeconds, err = nonNegative(field+".talkTimeSeconds", l.TalkTimeSeconds); err != nil {
		return leg, err
	}
	if r := l.Recording; r != nil {
		ct := strings.ToLower(strings.TrimSpace(r.ContentType))
		if _, ok := recordingTypes[ct]; !ok {
			return leg, invalid("%s.recording.contentType %q is not a supported audio type (audio/wav, audio/mpeg, audio/ogg, audio/webm, audio/mp4, audio/aac, audio/flac, audio/basic)", field, r.ContentType)
		}
		if base64.StdEncoding.DecodedLen(len(r.Content)) > MaxRecordingBytes+3 {
			return leg, invalid("%s.recording.content is larger than %d bytes", field, MaxRecordingBytes)
		}
		data, err := base64.StdEncoding.DecodeString(r.Content)
		if err != nil {
			return leg, invalid("%s.recording.content is not standard base64", field)
		}
		if len(data) == 0 {
			return leg, invalid("%s.recording.content is empty", field)
		}
		leg.Recording = &domain.Recording{ContentType: ct, Content: data, Bytes: int64(len(data))}
	}
	return leg, nil
}

func parseEvent(e eventJSON) (*Item, error) {
	switch e.Event {
	case "ringing", "answered", "ended":
	default:
		return nil, invalid("event must be ringing, answered or ended, not %q", e.Event)
	}
	if _, _, ok := domain.ParseCallID(e.ID); !ok {
		return nil, invalid("id %q: want %s, without leading zeros", e.ID, domain.CallIDShape)
	}
	if e.Direction != domain.CallInbound && e.Direction != domain.CallOutbound {
		return nil, invalid("direction must be inbound or outbound, not %q", e.Direction)
	}
	start, err := parseTime("startTime", e.StartTime)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, v string }{{"callerNumber", e.CallerNumber}, {"calledNumber", e.CalledNumber}} {
		if _, err := text(f.name, f.v); err != nil {
			return nil, err
		}
	}
	if err := checkCount("users", len(e.Users), MaxTagValues); err != nil {
		return nil, err
	}
	var users []string
	for i, u := range e.Users {
		v, err := tagValue(domain.TagUser, u)
		if err != nil {
			return nil, invalid("users[%d]: %v", i, err)
		}
		users = append(users, v)
	}
	return &Item{Event: &domain.CallEvent{
		Event: "call." + e.Event, CallID: e.ID, Direction: e.Direction, CallerNumber: e.CallerNumber,
		CalledNumber: e.CalledNumber, StartTime: start, Users: dedupe(users),
	}}, nil
}
