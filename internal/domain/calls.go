package domain

import (
	"strconv"
	"strings"
	"time"
)

// Call directions and statuses, as the public API spells them.
const (
	CallInbound  = "inbound"
	CallOutbound = "outbound"

	CallAnswered  = "answered"
	CallMissed    = "missed"
	CallVoicemail = "voicemail"
	CallUnknown   = "unknown"
)

// Kinds of the multi-valued fields a call is filtered on (call_tags.kind).
const (
	TagNumber    = "number"
	TagExtension = "extension"
	TagQueue     = "queue"
	TagHuntgroup = "huntgroup"
	TagUser      = "user"
)

// DerivedWindow is how far back "repeated" counts earlier calls from the same
// caller, and how long after an abandoned call an outbound call to the caller
// counts as its callback.
const DerivedWindow = 24 * time.Hour

// Call is one call of the call history: the public API's Call plus what the
// search filters need.
type Call struct {
	AccountID        int64
	ID               string // "unixtime.sequence", kept as given
	Direction        string
	Status           string
	StatusCode       int64
	CallerType       string
	CalledType       string
	CallerName       string
	CallerNumber     string
	CalledName       string
	CalledNumber     string
	DialledNumber    string
	CallerIDInternal string
	CallerIDExternal string
	StartTime        time.Time
	EndTime          *time.Time
	DurationSeconds  int64
	TalkTimeSeconds  int64
	WaitTimeSeconds  int64
	Transferred      int64
	Abandoned        bool
	Recorded         bool
	// CalledBack and Repeated are derived from the stored calls (DerivedWindow).
	CalledBack    string
	Repeated      int64
	CallPurpose   string
	CallSentiment string
	// Contact is the contact that holds the other party's number, where
	// the caller may read contacts (filled by the calls service).
	Contact *ContactRef

	Numbers    []string // account DIDs involved
	Extensions []string
	Queues     []string
	Huntgroups []string
	Users      []string // user ids, as strings
}

// CallLeg is one leg of a call; legs chain through BridgedFromCallID.
type CallLeg struct {
	UniqueID          string
	CallID            string // the switch's id for the leg
	BridgedFromCallID string
	StartTime         time.Time
	EndTime           *time.Time
	DurationSeconds   int64
	TalkTimeSeconds   int64
	From              string
	To                string
	Recording         *Recording // nil when the leg was not recorded (or not yet)
}

// Recording is a leg's audio in the blob store.
type Recording struct {
	ContentType string
	Blob        string // blob name: a secret
	Bytes       int64
	Content     []byte // on ingest only, before it is stored
}

// Transcript is the text of one leg in one language, as timed segments.
type Transcript struct {
	UniqueID string // the leg
	Language string // BCP 47 tag
	Segments []TranscriptSegment
}

// TranscriptSegment is one utterance: who spoke, on which channel, from when
// to when (milliseconds from the start of the leg), and what was said.
type TranscriptSegment struct {
	Speaker string `json:"speaker"`
	Channel int    `json:"channel"`
	StartMs int64  `json:"startMs"`
	EndMs   int64  `json:"endMs"`
	Text    string `json:"text"`
}

// CallRecord is one call as ingested: the call with its legs and transcripts.
type CallRecord struct {
	Call        Call
	Legs        []CallLeg
	Transcripts []Transcript
}

// ParseCallID splits a call id of the form "unixtime.sequence" into its two
// numbers. Only the canonical form is accepted: digits without leading zeros
// (a lone 0 aside), each part at most 18 digits, so that one call has one id.
func ParseCallID(id string) (sec, seq int64, ok bool) {
	a, b, found := strings.Cut(id, ".")
	if !found {
		return 0, 0, false
	}
	if sec, ok = canonicalUint(a); !ok {
		return 0, 0, false
	}
	if seq, ok = canonicalUint(b); !ok {
		return 0, 0, false
	}
	return sec, seq, true
}

func canonicalUint(s string) (int64, bool) {
	if s == "" || len(s) > 18 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// CallIDShape names the expected form of a call id, for error messages.
const CallIDShape = "unixtime.sequence (digits, a dot, digits; for example 1700000000.42)"

// StatusForCode is the status word a numeric status code reports: -1 missed,
// 0 voicemail, 1 or more answered.
func StatusForCode(code int64) string {
	switch {
	case code < 0:
		return CallMissed
	case code == 0:
		return CallVoicemail
	}
	return CallAnswered
}

// CallEvent is the payload of AccountRealTimeCalls, AccountEndedCalls and
// UserEndedCalls events. It carries the call id a client needs to read the
// call back through the API.
type CallEvent struct {
	Event        string     `json:"event"` // call.ringing, call.answered, call.ended
	CallID       string     `json:"callId"`
	Direction    string     `json:"direction"`
	Status       string     `json:"status,omitempty"` // on call.ended
	CallerNumber string     `json:"callerNumber"`
	CalledNumber string     `json:"calledNumber"`
	StartTime    time.Time  `json:"startTime"`
	EndTime      *time.Time `json:"endTime,omitempty"`
	UserID       string     `json:"userId,omitempty"` // on UserEndedCalls
	Users        []string   `json:"users,omitempty"`
}

// TranscriptionEvent is the payload of an AccountAITranscription event.
type TranscriptionEvent struct {
	Event    string `json:"event"` // transcript.ready
	CallID   string `json:"callId"`
	UniqueID string `json:"uniqueId"`
	Language string `json:"language"`
}
