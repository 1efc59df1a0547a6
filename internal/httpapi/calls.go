package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"switchboard/internal/calls"
	"switchboard/internal/domain"
)

// callSearchRequest is POST /calls/search's body.
type callSearchRequest struct {
	Start     *int64       `json:"start"`
	End       *int64       `json:"end"`
	TimeZone  string       `json:"timeZone"`
	Limit     *int         `json:"limit"`
	Offset    *int         `json:"offset"`
	Direction string       `json:"direction"`
	Filters   *callFilters `json:"filters"`
	Sort      *callSort    `json:"sort"`
}

type callFilters struct {
	Numbers           []string    `json:"numbers"`
	NumbersExclude    []string    `json:"numbersExclude"`
	Extensions        []string    `json:"extensions"`
	ExtensionsExclude []string    `json:"extensionsExclude"`
	Queues            []string    `json:"queues"`
	QueuesExclude     []string    `json:"queuesExclude"`
	Huntgroups        []string    `json:"huntgroups"`
	HuntgroupsExclude []string    `json:"huntgroupsExclude"`
	Users             []string    `json:"users"`
	Directions        []string    `json:"directions"`
	Statuses          []string    `json:"statuses"`
	Search            string      `json:"search"`
	Duration          *callBounds `json:"duration"`
	TalkTime          *callBounds `json:"talkTime"`
	WaitTime          *callBounds `json:"waitTime"`
	TimeOfDay         *callBounds `json:"timeOfDay"`
	CallPurpose       []string    `json:"callPurpose"`
	CallSentiment     []string    `json:"callSentiment"`
	DaysOfWeek        []string    `json:"daysOfWeek"`
	DaysOfMonth       []int       `json:"daysOfMonth"`
}

// callBounds is {start, end}; the spec gives strings, and a whole number of
// seconds written as a JSON number is read the same.
type callBounds struct {
	Start boundValue `json:"start"`
	End   boundValue `json:"end"`
}

type boundValue string

func (b *boundValue) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = boundValue(s)
		return nil
	}
	if string(data) == "null" {
		*b = ""
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(data, &n); err != nil {
		return err
	}
	*b = boundValue(n.String())
	return nil
}

type callSort struct {
	Field     string `json:"field"`
	Direction string `json:"direction"`
}

func (r *callSearchRequest) params() calls.SearchParams {
	p := calls.SearchParams{Start: r.Start, End: r.End, TimeZone: r.TimeZone, Limit: r.Limit, Offset: r.Offset, Direction: r.Direction}
	if r.Sort != nil {
		p.SortField, p.SortDir = r.Sort.Field, r.Sort.Direction
	}
	if f := r.Filters; f != nil {
		bounds := func(b *callBounds) *calls.Bounds {
			if b == nil {
				return nil
			}
			return &calls.Bounds{Start: string(b.Start), End: string(b.End)}
		}
		p.Filters = calls.Filters{
			Numbers: f.Numbers, NumbersExclude: f.NumbersExclude, Extensions: f.Extensions, ExtensionsExclude: f.ExtensionsExclude,
			Queues: f.Queues, QueuesExclude: f.QueuesExclude, Huntgroups: f.Huntgroups, HuntgroupsExclude: f.HuntgroupsExclude,
			Users: f.Users, Directions: f.Directions, Statuses: f.Statuses, Search: f.Search,
			Duration: bounds(f.Duration), TalkTime: bounds(f.TalkTime), WaitTime: bounds(f.WaitTime), TimeOfDay: bounds(f.TimeOfDay),
			CallPurpose: f.CallPurpose, CallSentiment: f.CallSentiment, DaysOfWeek: f.DaysOfWeek, DaysOfMonth: f.DaysOfMonth,
		}
	}
	return p
}

// callJSON is the public API's Call.
type callJSON struct {
	ID               string `json:"id"`
	Direction        string `json:"direction"`
	Status           string `json:"status"`
	StatusCode       int64  `json:"statusCode"`
	CallerType       string `json:"callerType"`
	CalledType       string `json:"calledType"`
	CallerName       string `json:"callerName"`
	CallerNumber     string `json:"callerNumber"`
	CalledName       string `json:"calledName"`
	CalledNumber     string `json:"calledNumber"`
	DialledNumber    string `json:"dialledNumber"`
	CallerIDInternal string `json:"callerIdInternal"`
	CallerIDExternal string `json:"callerIdExternal"`
	StartTime        string `json:"startTime"`
	EndTime          string `json:"endTime,omitempty"`
	DurationSeconds  int64  `json:"durationSeconds"`
	TalkTimeSeconds  int64  `json:"talkTimeSeconds"`
	Transferred      int64  `json:"transferred"`
	Abandoned        bool   `json:"abandoned"`
	Recorded         bool   `json:"recorded"`
	CalledBack       string `json:"calledBack,omitempty"`
	Repeated         int64  `json:"repeated"`
	// Contact is beyond the spec (issue 33): who the other party is.
	Contact *domain.ContactRef `json:"contact,omitempty"`
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func optTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return rfc3339(*t)
}

func toCallJSON(c domain.Call) callJSON {
	return callJSON{
		ID: c.ID, Direction: c.Direction, Status: c.Status, StatusCode: c.StatusCode, CallerType: c.CallerType,
		CalledType: c.CalledType, CallerName: c.CallerName, CallerNumber: c.CallerNumber, CalledName: c.CalledName,
		CalledNumber: c.CalledNumber, DialledNumber: c.DialledNumber, CallerIDInternal: c.CallerIDInternal,
		CallerIDExternal: c.CallerIDExternal, StartTime: rfc3339(c.StartTime), EndTime: optTime(c.EndTime),
		DurationSeconds: c.DurationSeconds, TalkTimeSeconds: c.TalkTimeSeconds, Transferred: c.Transferred,
		Abandoned: c.Abandoned, Recorded: c.Recorded, CalledBack: c.CalledBack, Repeated: c.Repeated,
		Contact: c.Contact,
	}
}

// callLegJSON is a leg in the call detail.
type callLegJSON struct {
	UniqueID          string `json:"uniqueId"`
	CallID            string `json:"callId"`
	BridgedFromCallID string `json:"bridgedFromCallId,omitempty"`
	StartTime         string `json:"startTime"`
	EndTime           string `json:"endTime,omitempty"`
	DurationSeconds   int64  `json:"durationSeconds"`
	TalkTimeSeconds   int64  `json:"talkTimeSeconds"`
	From              string `json:"from"`
	To                string `json:"to"`
	Recorded          bool   `json:"recorded"`
}

type callDetailJSON struct {
	callJSON
	Legs []callLegJSON `json:"legs"`
}

// recordedLegJSON is the public API's Recorded leg.
type recordedLegJSON struct {
	UniqueID        string `json:"uniqueId"`
	CallID          string `json:"callId"`
	URL             string `json:"url"`
	StartTime       string `json:"startTime"`
	DurationSeconds int64  `json:"durationSeconds"`
	TalkTimeSeconds int64  `json:"talkTimeSeconds"`
	From            string `json:"from"`
	To              string `json:"to"`
}

type transcriptJSON struct {
	UniqueID string                     `json:"uniqueId"`
	Language string                     `json:"language"`
	Segments []domain.TranscriptSegment `json:"segments"`
}

func (s *Server) searchCalls(w http.ResponseWriter, r *http.Request) error {
	var req callSearchRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	res, err := s.calls.Search(r.Context(), principal(r), req.params())
	if err != nil {
		return err
	}
	writeEncoded(w, http.StatusOK, appendCallSearch(make([]byte, 0, 512+640*len(res.Calls)), res.Total, res.Limit, res.Offset, res.Calls))
	return nil
}

func (s *Server) getCall(w http.ResponseWriter, r *http.Request) error {
	d, err := s.calls.Call(r.Context(), principal(r), r.PathValue("callid"))
	if err != nil {
		return err
	}
	out := callDetailJSON{callJSON: toCallJSON(d.Call), Legs: make([]callLegJSON, len(d.Legs))}
	for i, l := range d.Legs {
		out.Legs[i] = callLegJSON{
			UniqueID: l.UniqueID, CallID: l.CallID, BridgedFromCallID: l.BridgedFromCallID, StartTime: rfc3339(l.StartTime),
			EndTime: optTime(l.EndTime), DurationSeconds: l.DurationSeconds, TalkTimeSeconds: l.TalkTimeSeconds,
			From: l.From, To: l.To, Recorded: l.Recording != nil,
		}
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func (s *Server) callTranscripts(w http.ResponseWriter, r *http.Request) error {
	list, err := s.calls.Transcripts(r.Context(), principal(r), r.PathValue("callid"))
	if err != nil {
		return err
	}
	out := make([]transcriptJSON, len(list))
	for i, t := range list {
		out[i] = transcriptJSON{UniqueID: t.UniqueID, Language: t.Language, Segments: t.Segments}
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func toRecordedLeg(r calls.RecordedLeg) recordedLegJSON {
	l := r.Leg
	return recordedLegJSON{UniqueID: l.UniqueID, CallID: l.CallID, URL: r.URL, StartTime: rfc3339(l.StartTime),
		DurationSeconds: l.DurationSeconds, TalkTimeSeconds: l.TalkTimeSeconds, From: l.From, To: l.To}
}

func (s *Server) callRecordings(w http.ResponseWriter, r *http.Request) error {
	list, err := s.calls.Recordings(r.Context(), principal(r), r.PathValue("callid"))
	if err != nil {
		return err
	}
	out := make([]recordedLegJSON, len(list))
	for i, rl := range list {
		out[i] = toRecordedLeg(rl)
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func (s *Server) callRecording(w http.ResponseWriter, r *http.Request) error {
	rl, err := s.calls.Recording(r.Context(), principal(r), r.PathValue("callid"), r.PathValue("uniqueid"))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toRecordedLeg(rl))
	return nil
}

// recordingLink plays a signed recording link: no Authorization header, the
// signature is the credential. Failures have empty bodies, like hosted media.
func (s *Server) recordingLink(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	audio, err := s.calls.OpenLink(r.Context(), strings.TrimPrefix(r.URL.Path, calls.LinkPrefix))
	if err != nil {
		status := errorStatus(err)
		if status == http.StatusInternalServerError {
			s.log.ErrorContext(r.Context(), "recording link", "err", err, "request_id", requestID(r.Context()))
			status = http.StatusInternalServerError
		}
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		return
	}
	defer audio.Close()
	h.Set("Content-Type", audio.ContentType)
	h.Set("Content-Disposition", "inline")
	// Revocable, so not cached by shared caches.
	h.Set("Cache-Control", "private, no-cache")
	http.ServeContent(w, r, "", audio.ModTime, audio)
}

// ingestBodyLimit bounds one push to the ingest endpoint: a batch of calls
// with their recordings in base64.
const ingestBodyLimit = 64 << 20

// IngestPath is where phone systems push calls and real-time call events.
const IngestPath = "/api/ingest/v1/calls"

// ingestSummaryJSON is the ingest endpoint's answer.
type ingestSummaryJSON struct {
	Imported int             `json:"imported"`
	Replaced int             `json:"replaced"`
	Events   int             `json:"events"`
	Skipped  int             `json:"skipped"`
	Problems []calls.Problem `json:"problems"`
}

// ingestCalls authenticates the phone system's ingest token (before reading
// the body), then ingests the body.
func (s *Server) ingestCalls(w http.ResponseWriter, r *http.Request) error {
	token, missing := bearer(r)
	if missing != "" {
		return domain.Errorf(domain.Unauthenticated, "%s", missing)
	}
	account, err := s.auth.IngestAccount(r.Context(), token)
	if err != nil {
		return err
	}
	// No query parameter: refused before a large body is waited for.
	if err := parseQuery(r).err(); err != nil {
		return err
	}
	return s.budgeted(ingestBodyLimit, func(w http.ResponseWriter, r *http.Request) error {
		raw, err := readBody(w, r, ingestBodyLimit)
		if err != nil {
			return err
		}
		sum, err := s.calls.IngestBody(r.Context(), account, raw)
		if err != nil {
			return err
		}
		writeData(w, http.StatusOK, ingestSummaryJSON(sum))
		return nil
	})(w, r)
}
