package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBlockedSenderInbound: a text from a blocked number is stored marked
// blocked with the reason, reaches no unread count and no list, and still
// writes its event marked blocked; once unblocked, the number's texts reach
// the inbox again.
func TestBlockedSenderInbound(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		const spammer = "14155550177"
		if status, _, body := f.do(t, "POST", "/api/public/v1/sms/lines/"+inboxMain+"/blocked", f.key, `{"number":"`+spammer+`","reason":"spam"}`); status != 201 {
			t.Fatalf("block: %d %s", status, body)
		}
		id := f.receive(t, inboxMain, spammer, "buy now")

		evs, err := f.st.Events(ctx, f.acme.ID, 0, 1000)
		must(t, err)
		last := evs[len(evs)-1]
		var ev struct {
			Event     string `json:"event"`
			MessageID int64  `json:"messageId"`
			Blocked   bool   `json:"blocked"`
		}
		must(t, json.Unmarshal(last.Payload, &ev))
		if ev.Event != "message.received" || ev.MessageID != id || !ev.Blocked {
			t.Errorf("event %s, want message.received of %d marked blocked", last.Payload, id)
		}

		for _, cred := range []string{f.key, f.maxTok} {
			if _, _, body := f.do(t, "GET", "/api/public/v1/sms/unread", cred, ""); !strings.Contains(string(body), `"total":0`) {
				t.Errorf("unread after a blocked text: %s, want total 0", body)
			}
			if _, _, body := f.do(t, "GET", "/api/public/v1/sms/conversations?unread=true", cred, ""); string(body) != "{\"data\":[]}\n" {
				t.Errorf("unread list after a blocked text: %s, want empty", body)
			}
		}
		status, _, body := f.do(t, "GET", "/api/public/v1/sms/conversations/"+inboxMain+"/"+spammer, f.key, "")
		var thread struct {
			Data struct {
				Messages []struct {
					ID          int64  `json:"id"`
					Blocked     bool   `json:"blocked"`
					BlockReason string `json:"blockReason"`
				} `json:"messages"`
			} `json:"data"`
		}
		must(t, json.Unmarshal(body, &thread))
		if status != 200 || len(thread.Data.Messages) != 1 || thread.Data.Messages[0].ID != id || !thread.Data.Messages[0].Blocked || thread.Data.Messages[0].BlockReason != "spam" {
			t.Errorf("thread: %d %s, want the text marked blocked for spam", status, body)
		}

		// Unblocked, the number reaches the inbox again.
		if status, _, _ := f.do(t, "DELETE", "/api/public/v1/sms/lines/"+inboxMain+"/blocked/"+spammer, f.key, ""); status != 204 {
			t.Fatalf("unblock: %d", status)
		}
		f.receive(t, inboxMain, spammer, "hello again")
		if _, _, body := f.do(t, "GET", "/api/public/v1/sms/unread", f.maxTok, ""); !strings.Contains(string(body), `"total":1`) {
			t.Errorf("unread after unblocking: %s, want total 1", body)
		}
	})
}
