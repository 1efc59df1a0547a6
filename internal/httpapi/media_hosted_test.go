package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/sms"
)

// sendMMS sends one attachment from line with key and returns its hosted URL.
func (f *sendFixture) sendMMS(t *testing.T, key, line string, a attachmentJSON) string {
	t.Helper()
	status, _, raw := f.post(t, key, "", jsonBody(t, sendBody{From: line, To: []string{usA}, Attachments: []attachmentJSON{a}}))
	res := decodeSend(t, raw)
	if status != 201 || len(res.Messages) != 1 || len(res.Messages[0].Media) != 1 {
		t.Fatalf("send with an attachment: %d %s", status, raw)
	}
	return res.Messages[0].Media[0]
}

// TestScheduleWithSentAttachmentURL: the spec's scheduled media is "hosted
// URLs", and POST /sms/messages is the spec's way to host one, so the URL a
// send returned for its attachment can be scheduled; another account's is
// refused exactly as a URL this server never hosted.
func TestScheduleWithSentAttachmentURL(t *testing.T) {
	t.Parallel()
	forEachScheduledEngine(t, func(t *testing.T, f *sendFixture) {
		soon := rfc(time.Now().Add(time.Hour))
		own := f.sendMMS(t, f.keys["acme"], lineMain, attach("a.png", "image/png", realImage(t, "image/png")))
		status, _, raw := f.schedule(t, f.keys["acme"], "", lineMain, scheduleBody{To: []string{usA}, Media: []string{own}, SendAt: soon})
		if m := decodeScheduled(t, raw); status != 201 || !slices.Equal(m.Media, []string{own}) {
			t.Fatalf("schedule with a sent attachment's URL: %d %s", status, raw)
		}

		foreign := f.sendMMS(t, f.keys["beta"], lineBeta, attach("b.gif", "image/gif", realImage(t, "image/gif")))
		status, _, foreignRaw := f.schedule(t, f.keys["acme"], "", lineMain, scheduleBody{To: []string{usA}, Media: []string{foreign}, SendAt: soon})
		_, _, unknownRaw := f.schedule(t, f.keys["acme"], "", lineMain, scheduleBody{To: []string{usA}, Media: []string{f.url + "/media/" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.png"}, SendAt: soon})
		fe, ue := decodeInto[errorEnvelope](t, foreignRaw), decodeInto[errorEnvelope](t, unknownRaw)
		if status != 400 || fe.Error.Type != "invalid_request" || fe != ue {
			t.Errorf("another account's sent attachment: %d %s; want 400 as for an unknown URL: %s", status, foreignRaw, unknownRaw)
		}
		if l := f.listScheduled(t, f.keys["acme"], lineMain); len(l) != 1 {
			t.Errorf("queued %d schedules, want the one with the account's own URL", len(l))
		}
	})
}

func (f *sendFixture) hostMedia(t *testing.T, key string, a attachmentJSON) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(a)
	status, _, raw := f.do(t, "POST", "/api/public/v1/sms/media", key, string(body))
	return status, raw
}

func fetchStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestHostedMediaQuotaOverHTTP: beyond the account's hosted-media quota an
// upload and a send with attachments are 409 conflict naming the quota, and
// nothing is sent, charged or kept; a send without attachments is not
// concerned, nor is another account.
func TestHostedMediaQuotaOverHTTP(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		png := realImage(t, "image/png")
		size := int64(len(png))
		must(t, f.st.SetMediaQuota(ctx, f.acme, size*3/2))
		if status, raw := f.hostMedia(t, f.keys["acme"], attach("a.png", "image/png", png)); status != 201 {
			t.Fatalf("upload within the quota: %d %s", status, raw)
		}
		status, raw := f.hostMedia(t, f.keys["acme"], attach("b.png", "image/png", png))
		if e := decodeInto[errorEnvelope](t, raw); status != 409 || e.Error.Type != "conflict" || !strings.Contains(e.Error.Message, "quota of ") ||
			!strings.Contains(e.Error.Message, "in use: ") {
			t.Errorf("upload beyond the quota: %d %s; want 409 conflict naming the quota and the usage", status, raw)
		}
		status, _, raw = f.post(t, f.keys["acme"], "", jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "see",
			Attachments: []attachmentJSON{attach("c.png", "image/png", png)}}))
		if e := decodeInto[errorEnvelope](t, raw); status != 409 || e.Error.Type != "conflict" || !strings.Contains(e.Error.Message, "quota of ") {
			t.Errorf("send with an attachment beyond the quota: %d %s; want 409 conflict naming the quota", status, raw)
		}
		if sent := f.sim.Sent(); len(sent) != 0 {
			t.Errorf("the carrier got %d messages", len(sent))
		}
		if status, _, raw := f.post(t, f.keys["acme"], "", jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "text only"})); status != 201 {
			t.Errorf("send without attachments at the quota: %d %s", status, raw)
		}
		if status, raw := f.hostMedia(t, f.keys["beta"], attach("a.png", "image/png", png)); status != 201 {
			t.Errorf("another account's upload: %d %s", status, raw)
		}
		if u, err := f.st.MediaUsage(ctx, f.acme); err != nil || u.Used != size {
			t.Errorf("usage %+v (%v), want the one upload's %d bytes", u, err, size)
		}
	})
}

// TestHostedMediaQuotaParallelUploads: uploads racing for the last room in
// the quota: exactly as many pass as fit.
func TestHostedMediaQuotaParallelUploads(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		png := realImage(t, "image/png")
		must(t, f.st.SetMediaQuota(ctx, f.acme, int64(len(png))*2))
		body, _ := json.Marshal(attach("a.png", "image/png", png))
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", f.url+"/api/public/v1/sms/media", strings.NewReader(string(body)))
				req.Header.Set("Authorization", "Bearer "+f.keys["acme"])
				req.Header.Set("Content-Type", "application/json")
				resp, err := f.client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if statuses[201] != 2 || statuses[409] != 6 {
			t.Errorf("8 parallel uploads with room for 2: %v; want 2 × 201 and 6 × 409", statuses)
		}
	})
}

// TestHostedMediaCleanupOverHTTP: the cleanup removes an upload nothing
// uses (its URL then 404s and its bytes are free again) and keeps files a
// pending schedule or a sent message uses.
func TestHostedMediaCleanupOverHTTP(t *testing.T) {
	t.Parallel()
	forEachDispatchEngine(t, func(t *testing.T, f *sendFixture) {
		png := realImage(t, "image/png")
		var urls []string
		for range 2 {
			status, raw := f.hostMedia(t, f.keys["acme"], attach("a.png", "image/png", png))
			if status != 201 {
				t.Fatalf("upload: %d %s", status, raw)
			}
			urls = append(urls, decodeInto[hostedData](t, raw).Data.URL)
		}
		unused, scheduled := urls[0], urls[1]
		if status, _, raw := f.schedule(t, f.keys["acme"], "", lineMain, scheduleBody{To: []string{usA}, Media: []string{scheduled}, SendAt: rfc(f.clock.Now().Add(time.Hour))}); status != 201 {
			t.Fatalf("schedule: %d %s", status, raw)
		}
		sent := f.sendMMS(t, f.keys["acme"], lineMain, attach("b.png", "image/png", png))

		// A day passes on the store's clock (nothing here dispatches the
		// schedule that falls due meanwhile: it stays pending).
		f.clock.Advance(25 * time.Hour)
		n, err := f.svc.CleanupMedia(ctx, 24*time.Hour, 1)
		if err != nil || n != 1 {
			t.Fatalf("cleanup: removed %d, %v; want the one unused upload", n, err)
		}
		if got := fetchStatus(t, unused); got != 404 {
			t.Errorf("the removed upload's URL: %d, want 404", got)
		}
		for _, u := range []string{scheduled, sent} {
			if got := fetchStatus(t, u); got != 200 {
				t.Errorf("a file in use: %d, want 200", got)
			}
		}
		if u, err := f.st.MediaUsage(ctx, f.acme); err != nil || u.Used != 2*int64(len(png)) {
			t.Errorf("usage %+v (%v), want the 2 files in use", u, err)
		}
		// The removed upload's URL is no longer schedulable.
		status, _, raw := f.schedule(t, f.keys["acme"], "", lineMain, scheduleBody{To: []string{usA}, Media: []string{unused}, SendAt: rfc(f.clock.Now().Add(time.Hour))})
		if e := decodeInto[errorEnvelope](t, raw); status != 400 || !strings.Contains(e.Error.Message, "media[0]") {
			t.Errorf("scheduling a removed upload: %d %s", status, raw)
		}
	})
}

// TestScheduledMediaThroughDispatch: a scheduled file is used by the
// schedule, then by the message it becomes (the dispatch hands the use
// over, also across a carrier refusal and retry): the cleanup never takes
// it; deleting that message, its last user, frees it.
func TestScheduledMediaThroughDispatch(t *testing.T) {
	t.Parallel()
	forEachDispatchEngine(t, func(t *testing.T, f *sendFixture) {
		png := realImage(t, "image/png")
		status, raw := f.hostMedia(t, f.keys["acme"], attach("a.png", "image/png", png))
		if status != 201 {
			t.Fatalf("upload: %d %s", status, raw)
		}
		url := decodeInto[hostedData](t, raw).Data.URL
		sendAt := f.clock.Now().Add(dispatchLead)
		status, _, raw = f.schedule(t, f.keys["acme"], "", lineMain, scheduleBody{To: []string{deBerlin}, Media: []string{url}, SendAt: sendAt.Format(time.RFC3339Nano)})
		if status != 201 {
			t.Fatalf("schedule: %d %s", status, raw)
		}
		f.sim.FailDestinations("49")  // the first attempt is refused and requeued
		f.clock.Advance(dispatchLead) // due
		d := f.svc.ScheduledDispatcher(sms.DispatcherConfig{Interval: 20 * time.Millisecond, RetryBase: 50 * time.Millisecond, RetryMax: 50 * time.Millisecond})
		d.TestSignals.Init()
		must(t, d.Start(ctx))
		defer d.Stop()
		for done := false; !done; {
			got := d.TestSignals.Dispatched.WaitOrTimeout(t)
			switch got.Outcome {
			case sms.DispatchRetry:
				if n, err := f.svc.CleanupMedia(ctx, time.Microsecond, 10); err != nil || n != 0 {
					t.Errorf("cleanup while the schedule waits for a retry: removed %d (%v)", n, err)
				}
				f.sim.FailDestinations()
			case sms.DispatchSent:
				done = true
			default:
				t.Fatalf("dispatch: %+v", got)
			}
		}
		if n, err := f.svc.CleanupMedia(ctx, time.Microsecond, 10); err != nil || n != 0 {
			t.Errorf("cleanup after the send: removed %d (%v), want none: the sent message uses the file", n, err)
		}
		if got := fetchStatus(t, url); got != 200 {
			t.Errorf("the sent file: %d, want 200", got)
		}
		thread := f.thread(t, lineMain, deBerlin)
		if len(thread) != 1 {
			t.Fatalf("thread %+v, want the sent message", thread)
		}
		path := fmt.Sprintf("/api/public/v1/sms/conversations/%s/%s/messages/%d", lineMain, deBerlin, thread[0].ID)
		if status, _, raw := f.do(t, "DELETE", path, f.keys["acme"], ""); status != 204 {
			t.Fatalf("delete the message: %d %s", status, raw)
		}
		if u, err := f.st.MediaUsage(ctx, f.acme); err != nil || u.Used != 0 {
			t.Errorf("usage after deleting the file's last message: %+v (%v), want 0", u, err)
		}
	})
}
