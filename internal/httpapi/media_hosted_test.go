package httpapi_test

import (
	"slices"
	"testing"
	"time"
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
