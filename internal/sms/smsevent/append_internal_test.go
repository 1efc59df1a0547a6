package smsevent

import (
	"encoding/json"
	"testing"

	"switchboard/internal/domain"
)

// The hand-written encoder writes exactly what encoding/json writes for the
// same event, whatever its strings hold.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	awkward := []string{"", "14155550100", `quote " and \ back`, "<b>&amp;</b>", "tab\tnew\nline\x00", "héllo ☎", "\u2028\u2029",
		"bad \xff utf8", "emoji 😀", "\x7f del"}
	var events []domain.SMSEvent
	for i, s := range awkward {
		other := awkward[(i+3)%len(awkward)]
		events = append(events,
			domain.SMSEvent{Event: s, MessageID: int64(i) - 3, Direction: other, Line: s, Number: other, Numbers: []string{s, other}},
			domain.SMSEvent{Event: domain.SMSDelivery, MessageID: 1 << 62, Line: s, Numbers: []string{}, GroupParticipants: []string{other, s},
				Status: other, Delivery: &domain.SMSDeliveryReport{Status: s, Error: other, At: s}, Blocked: true},
			domain.SMSEvent{Event: domain.SMSReceived, Numbers: nil, GroupParticipants: []string{}, Status: s},
			domain.SMSEvent{Event: domain.SMSFailed, Numbers: []string{other}, Status: domain.StatusFailed, Error: s},
		)
	}
	for _, e := range events {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEvent(nil, &e); string(got) != string(want) {
			t.Errorf("appendEvent(%+v)\n got %s\nwant %s", e, got, want)
		}
	}
}
