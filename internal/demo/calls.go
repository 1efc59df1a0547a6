package demo

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"switchboard/internal/calls"
	"switchboard/internal/domain"
)

// CallsResult says what SeedCalls made.
type CallsResult struct {
	Calls int
	// Examples are ids of calls worth looking at.
	Transferred, Recorded, CalledBack string
}

// BuildCalls makes n calls of the last 30 days before now for the demo
// account (plus the callbacks of some abandoned ones): answered, missed,
// voicemail, transferred across several legs, abandoned then called back;
// some recorded (a generated tone as long as the call's talk) and
// transcribed. Callers are the demo's patients, each under their one name. The same seed gives
// the same calls. IngestCalls stores them.
func BuildCalls(res Result, n int, now time.Time) ([]*domain.CallRecord, CallsResult, error) {
	rng := rand.New(rand.NewPCG(42, 7))
	out := CallsResult{}
	users := map[string]string{} // extension → user id
	var exts []string
	for _, u := range res.Users {
		if u.Extension != "" && u.Extension != "199" {
			users[u.Extension] = strconv.FormatInt(u.ID, 10)
			exts = append(exts, u.Extension)
		}
	}
	if len(exts) == 0 {
		return nil, out, fmt.Errorf("demo: no users with extensions")
	}
	slices.Sort(exts)
	callers := make([]string, Patients)
	for i := range callers {
		callers[i] = patientNumber(i)
	}
	dids := []string{"14155550100", "14155550101", "14155550102"}
	purposes := []string{"appointment", "billing", "insurance", "emergency", "follow-up"}
	sentiments := []string{"positive", "neutral", "negative"}
	phrases := [][2]string{
		{"Hi, I'd like to book a cleaning next week.", "Of course, does Tuesday at nine work?"},
		{"I have a question about my last bill.", "Let me pull up your account."},
		{"Do you take Delta Dental insurance?", "Yes, we are in network with Delta."},
		{"I chipped a tooth this morning.", "We can see you today at two."},
		{"Calling to confirm my appointment.", "You're confirmed for Thursday at ten."},
	}
	// A recording lasts the leg's talk time. To keep the demo small, only
	// short calls are recorded, in 8 kHz 8-bit telephone quality (8 KB a
	// second), and calls of one length share their tone.
	audio := map[int64][]byte{}
	tone := func(seconds int64) []byte {
		if a, ok := audio[seconds]; ok {
			return a
		}
		audio[seconds] = wavTone(int(seconds)*1000, 440)
		return audio[seconds]
	}
	shortTalk := func() int64 { return int64(12 + rng.IntN(29)) }

	var recs []*domain.CallRecord
	start := now.Add(-30 * 24 * time.Hour).Truncate(time.Second)
	span := int64(30 * 24 * time.Hour / time.Second)
	var pendingCallbacks []struct {
		number string
		at     time.Time
	}
	for i := 0; i < n; i++ {
		// Office hours mostly: pick a day, then a time while the clinic is open.
		at := start.Add(time.Duration(rng.Int64N(span)) * time.Second)
		lt := at.In(clinic)
		if open, closing := officeHours(lt); closing > open && rng.IntN(10) < 8 {
			lt = time.Date(lt.Year(), lt.Month(), lt.Day(), open+rng.IntN(closing-open), rng.IntN(60), rng.IntN(60), 0, clinic)
			at = lt.UTC()
		}
		// Today's hours not reached yet, or a call that would still be
		// going on: the day before (no call lasts an hour).
		if at.After(now.Add(-time.Hour)) {
			at = at.Add(-24 * time.Hour)
		}
		id := fmt.Sprintf("%d.%d", at.Unix(), 1000+i)
		caller := callers[rng.IntN(len(callers))]
		name := patientName(caller)
		ext := exts[rng.IntN(len(exts))]
		did := dids[rng.IntN(len(dids))]
		c := domain.Call{ID: id, StartTime: at, CallPurpose: purposes[rng.IntN(len(purposes))], CallSentiment: sentiments[rng.IntN(len(sentiments))]}
		rec := &domain.CallRecord{}
		kind := rng.IntN(100)
		leg := func(uid, from, to string, st time.Time, dur, talk int64, recorded bool) domain.CallLeg {
			e := st.Add(time.Duration(dur) * time.Second)
			l := domain.CallLeg{UniqueID: uid, CallID: uid, StartTime: st, EndTime: &e, DurationSeconds: dur, TalkTimeSeconds: talk, From: from, To: to}
			if recorded {
				l.Recording = &domain.Recording{ContentType: "audio/wav", Content: tone(talk)}
			}
			return l
		}
		switch {
		case kind < 45: // inbound, answered
			wait := int64(3 + rng.IntN(40))
			talk := int64(30 + rng.IntN(600))
			recorded := rng.IntN(20) == 0
			if recorded {
				talk = shortTalk()
			}
			c.Direction, c.Status, c.StatusCode = domain.CallInbound, domain.CallAnswered, 1
			c.CallerType, c.CalledType, c.CallerName, c.CallerNumber = "external", "queue", name, caller
			c.CalledName, c.CalledNumber, c.DialledNumber = "Front desk", did, did
			c.WaitTimeSeconds, c.TalkTimeSeconds, c.DurationSeconds = wait, talk, wait+talk
			c.Numbers, c.Queues, c.Extensions, c.Users = []string{did}, []string{"front-desk"}, []string{ext}, []string{users[ext]}
			rec.Legs = []domain.CallLeg{leg(id, caller, ext, at, wait+talk, talk, recorded)}
			if recorded {
				p := phrases[rng.IntN(len(phrases))]
				rec.Transcripts = []domain.Transcript{{UniqueID: id, Language: "en-US", Segments: []domain.TranscriptSegment{
					{Speaker: "caller", Channel: 0, StartMs: 0, EndMs: 2400, Text: p[0]},
					{Speaker: "agent", Channel: 1, StartMs: 2600, EndMs: 4800, Text: p[1]},
				}}}
				out.Recorded = id
			}
		case kind < 55: // transferred across legs
			wait := int64(5 + rng.IntN(20))
			t1, t2 := int64(20+rng.IntN(60)), int64(60+rng.IntN(400))
			recorded := rng.IntN(10) == 0
			if recorded {
				t2 = shortTalk()
			}
			ext2 := exts[(slices.Index(exts, ext)+1)%len(exts)]
			c.Direction, c.Status, c.StatusCode, c.Transferred = domain.CallInbound, domain.CallAnswered, 2, 1
			c.CallerType, c.CalledType, c.CallerName, c.CallerNumber = "external", "user", name, caller
			c.CalledNumber, c.DialledNumber = did, did
			c.WaitTimeSeconds, c.TalkTimeSeconds, c.DurationSeconds = wait, t1+t2, wait+t1+t2
			c.Numbers, c.Extensions, c.Users = []string{did}, []string{ext, ext2}, []string{users[ext], users[ext2]}
			l1 := leg(id, caller, ext, at, wait+t1, t1, false)
			uid2 := fmt.Sprintf("%d.%d", at.Unix()+wait+t1, 5000+i)
			l2 := leg(uid2, ext, ext2, at.Add(time.Duration(wait+t1)*time.Second), t2, t2, recorded)
			l2.BridgedFromCallID = id
			rec.Legs = []domain.CallLeg{l1, l2}
			if recorded || out.Transferred == "" {
				out.Transferred = id
			}
		case kind < 67: // inbound, abandoned; often called back
			wait := int64(5 + rng.IntN(60))
			c.Direction, c.Status, c.StatusCode, c.Abandoned = domain.CallInbound, domain.CallMissed, -1, true
			c.CallerType, c.CalledType, c.CallerName, c.CallerNumber = "external", "queue", name, caller
			c.CalledNumber, c.DialledNumber = did, did
			c.WaitTimeSeconds, c.DurationSeconds = wait, wait
			c.Numbers, c.Queues = []string{did}, []string{"front-desk"}
			if rng.IntN(3) > 0 {
				pendingCallbacks = append(pendingCallbacks, struct {
					number string
					at     time.Time
				}{caller, nextOpen(at.Add(time.Duration(10+rng.IntN(180)) * time.Minute))})
			}
		case kind < 75: // voicemail
			c.Direction, c.Status, c.StatusCode = domain.CallInbound, domain.CallVoicemail, 0
			c.CallerType, c.CalledType, c.CallerName, c.CallerNumber = "external", "user", name, caller
			c.CalledNumber, c.DialledNumber = did, did
			message := int64(10 + rng.IntN(60))
			c.WaitTimeSeconds, c.TalkTimeSeconds, c.DurationSeconds = 20, message, 20+message
			c.Numbers, c.Extensions, c.Users = []string{did}, []string{ext}, []string{users[ext]}
		case kind < 95: // outbound, answered
			talk := int64(20 + rng.IntN(400))
			c.Direction, c.Status, c.StatusCode = domain.CallOutbound, domain.CallAnswered, 1
			c.CallerType, c.CalledType, c.CallerNumber, c.CallerName = "user", "external", ext, "Ext "+ext
			c.CalledNumber, c.CalledName, c.DialledNumber, c.CallerIDExternal = caller, name, caller, did
			c.WaitTimeSeconds, c.TalkTimeSeconds, c.DurationSeconds = 8, talk, 8+talk
			c.Extensions, c.Users, c.Numbers = []string{ext}, []string{users[ext]}, []string{did}
		default: // outbound, no answer
			c.Direction, c.Status, c.StatusCode = domain.CallOutbound, domain.CallMissed, -1
			c.CallerType, c.CalledType, c.CallerNumber, c.CallerName = "user", "external", ext, "Ext "+ext
			c.CalledNumber, c.CalledName, c.DialledNumber, c.CallerIDExternal = caller, name, caller, did
			c.WaitTimeSeconds, c.DurationSeconds = 30, 30
			c.Extensions, c.Users, c.Numbers = []string{ext}, []string{users[ext]}, []string{did}
		}
		if len(rec.Legs) == 0 {
			rec.Legs = []domain.CallLeg{leg(id, c.CallerNumber, c.CalledNumber, at, c.DurationSeconds, c.TalkTimeSeconds, false)}
		}
		e := at.Add(time.Duration(c.DurationSeconds) * time.Second)
		c.EndTime = &e
		for _, l := range rec.Legs {
			if l.Recording != nil {
				c.Recorded = true
			}
		}
		rec.Call = c
		recs = append(recs, rec)
		out.Calls++
	}
	// The callbacks of abandoned calls.
	for j, cb := range pendingCallbacks {
		if cb.at.Add(5 * time.Minute).After(now) { // not made yet
			continue
		}
		ext := exts[rng.IntN(len(exts))]
		talk := int64(30 + rng.IntN(200))
		id := fmt.Sprintf("%d.%d", cb.at.Unix(), 900000+j)
		e := cb.at.Add(time.Duration(8+talk) * time.Second)
		c := domain.Call{ID: id, Direction: domain.CallOutbound, Status: domain.CallAnswered, StatusCode: 1,
			CallerType: "user", CalledType: "external", CallerNumber: ext, CallerName: "Ext " + ext, CalledNumber: cb.number, CalledName: patientName(cb.number),
			DialledNumber: cb.number, StartTime: cb.at, EndTime: &e, WaitTimeSeconds: 8, TalkTimeSeconds: talk, DurationSeconds: 8 + talk,
			Extensions: []string{ext}, Users: []string{users[ext]}, CallPurpose: "follow-up", CallSentiment: "positive"}
		rec := &domain.CallRecord{Call: c, Legs: []domain.CallLeg{{UniqueID: id, CallID: id, StartTime: cb.at, EndTime: &e,
			DurationSeconds: 8 + talk, TalkTimeSeconds: talk, From: ext, To: cb.number}}}
		recs = append(recs, rec)
		out.Calls++
		out.CalledBack = id
	}
	return recs, out, nil
}

// IngestCalls stores the calls BuildCalls made.
func IngestCalls(ctx context.Context, svc *calls.Service, accountID int64, recs []*domain.CallRecord) error {
	b := svc.NewBatch(ctx, accountID, 16, nil)
	for i, rec := range recs {
		b.AddCall(i+1, rec)
	}
	sum := b.Wait()
	if sum.Skipped > 0 {
		return fmt.Errorf("demo calls: %d skipped, first: line %d: %s", sum.Skipped, sum.Problems[0].Line, sum.Problems[0].Reason)
	}
	return nil
}

// wavTone is a mono 8 kHz 8-bit PCM WAV file of a sine tone: telephone
// quality, 8,000 bytes a second.
func wavTone(ms, hz int) []byte {
	const rate = 8000
	samples := rate * ms / 1000
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + samples))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1)) // PCM
	w(uint16(1)) // mono
	w(uint32(rate))
	w(uint32(rate)) // bytes a second
	w(uint16(1))    // bytes a sample
	w(uint16(8))    // bits a sample
	b.WriteString("data")
	w(uint32(samples))
	for i := 0; i < samples; i++ {
		// A short fade in and out keeps the tone from clicking.
		env := math.Min(1, math.Min(float64(i), float64(samples-i))/400)
		// 8-bit PCM is unsigned, silence at 128.
		w(uint8(128 + 40*env*math.Sin(2*math.Pi*float64(hz)*float64(i)/rate)))
	}
	return b.Bytes()
}
