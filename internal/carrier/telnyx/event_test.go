package telnyx

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want Event
	}{
		{
			name: "message.sent",
			body: readTestdata(t, "message_sent.json"),
			want: Event{
				ID: "0c4a6f8e-2f7d-4b8e-9a51-6d2f0b1e7c31", Type: EventSent,
				OccurredAt: time.Date(2025, 6, 15, 15, 6, 41, 118e6, time.UTC),
				Receipt:    &Receipt{MessageID: "40385f64-aaaa-bbbb-cccc-2c963f66afa6", To: "+15557654321", Status: "sent"},
			},
		},
		{
			name: "message.finalized, failed",
			body: readTestdata(t, "message_finalized_failed.json"),
			want: Event{
				ID: "6b9e2d14-83c0-4f57-b2a6-0e4d9c7f1a28", Type: EventFinalized,
				OccurredAt: time.Date(2025, 6, 15, 15, 6, 44, 870e6, time.UTC),
				Receipt: &Receipt{
					MessageID: "40385f64-aaaa-bbbb-cccc-2c963f66afa6", To: "+15557654321", Status: "delivery_failed",
					Errors: []Problem{
						{Code: "40008", Title: "Undeliverable", Detail: "The destination carrier did not accept the message."},
						{Code: "40300", Title: "Blocked due to STOP message"},
					},
				},
			},
		},
		{
			name: "message.received, group MMS",
			body: readTestdata(t, "message_received_mms.json"),
			want: Event{
				ID: "c2f1a7b0-5e3d-4a9c-8f62-91d04e6b3a77", Type: EventReceived,
				OccurredAt: time.Date(2025, 6, 15, 15, 10, 2, 574e6, time.UTC),
				Inbound: &Inbound{
					MessageID: "7d21c9e4-0b6a-4f38-a5e2-c8f3b1d0e946",
					From:      "+15557654321", To: "+15551234567",
					Cc:        []string{"+15550001111", "+15550002222"},
					Text:      "Photo from tonight 📷",
					MediaURLs: []string{"https://media.telnyx.example/7d21c9e4/1.jpg", "https://media.telnyx.example/7d21c9e4/2.smil"},
				},
			},
		},
		{
			name: "message.received, plain SMS",
			body: `{"data":{"event_type":"message.received","id":"e-2","payload":{"id":"m-2","from":{"phone_number":"+15557654321"},"to":[{"phone_number":"+15551234567"}],"text":"STOP","media":[],"cc":[]}}}`,
			want: Event{ID: "e-2", Type: EventReceived, Inbound: &Inbound{MessageID: "m-2", From: "+15557654321", To: "+15551234567", Text: "STOP"}},
		},
		{
			name: "message.sent with from as a bare number",
			body: `{"data":{"event_type":"message.sent","id":"e-3","occurred_at":"2025-06-15T15:06:41Z","payload":{"id":"m-3","from":"+15551234567","to":[{"phone_number":"+15557654321","status":"queued"}]}}}`,
			want: Event{
				ID: "e-3", Type: EventSent, OccurredAt: time.Date(2025, 6, 15, 15, 6, 41, 0, time.UTC),
				Receipt: &Receipt{MessageID: "m-3", To: "+15557654321", Status: "queued"},
			},
		},
		{
			name: "a status Telnyx added later passes through",
			body: `{"data":{"event_type":"message.finalized","id":"e-4","payload":{"id":"m-4","to":[{"phone_number":"+15557654321","status":"expired"}]}}}`,
			want: Event{ID: "e-4", Type: EventFinalized, Receipt: &Receipt{MessageID: "m-4", To: "+15557654321", Status: "expired"}},
		},
		{
			name: "occurred_at unreadable",
			body: `{"data":{"event_type":"message.sent","id":"e-5","occurred_at":"date-time","payload":{"id":"m-5","to":[{"phone_number":"+15557654321","status":"sent"}]}}}`,
			want: Event{ID: "e-5", Type: EventSent, Receipt: &Receipt{MessageID: "m-5", To: "+15557654321", Status: "sent"}},
		},
		{
			name: "message.read is left alone",
			body: `{"data":{"event_type":"message.read","id":"e-6","payload":{"id":"m-6","to":[{"phone_number":"+15557654321","status":"read"}]}}}`,
			want: Event{ID: "e-6", Type: "message.read"},
		},
		{
			name: "another product's event",
			body: `{"data":{"event_type":"call.initiated","id":"e-7","occurred_at":"2025-06-15T15:06:41Z","payload":{"call_control_id":"v3:abc"}}}`,
			want: Event{ID: "e-7", Type: "call.initiated", OccurredAt: time.Date(2025, 6, 15, 15, 6, 41, 0, time.UTC)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEvent([]byte(tt.body))
			if err != nil {
				t.Fatalf("ParseEvent: %v", err)
			}
			if !got.OccurredAt.Equal(tt.want.OccurredAt) {
				t.Errorf("OccurredAt %v, want %v", got.OccurredAt, tt.want.OccurredAt)
			}
			got.OccurredAt, tt.want.OccurredAt = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %s\nwant %s", jsonString(got), jsonString(tt.want))
			}
		})
	}
}

func TestParseEventRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, wantErr string
	}{
		{name: "not JSON", body: `event_type=message.sent`, wantErr: "webhook body"},
		{name: "no data", body: `{"event_type":"message.sent"}`, wantErr: "no data.event_type"},
		{name: "no event type", body: `{"data":{"id":"e-1","payload":{}}}`, wantErr: "no data.event_type"},
		{name: "receipt without payload", body: `{"data":{"event_type":"message.sent","id":"e-1"}}`, wantErr: "without a payload"},
		{name: "receipt with payload null", body: `{"data":{"event_type":"message.sent","id":"e-1","payload":null}}`, wantErr: "without a payload"},
		{name: "payload not an object", body: `{"data":{"event_type":"message.sent","payload":"m-1"}}`, wantErr: "payload"},
		{name: "receipt without id", body: `{"data":{"event_type":"message.finalized","payload":{"to":[{"phone_number":"+15557654321","status":"sent"}]}}}`, wantErr: "payload.id"},
		{name: "receipt without to", body: `{"data":{"event_type":"message.finalized","payload":{"id":"m-1","to":[]}}}`, wantErr: "payload.to[0].phone_number"},
		{name: "receipt without status", body: `{"data":{"event_type":"message.finalized","payload":{"id":"m-1","to":[{"phone_number":"+15557654321"}]}}}`, wantErr: "payload.to[0].status"},
		{name: "receipt with a bad error code", body: `{"data":{"event_type":"message.finalized","payload":{"id":"m-1","to":[{"phone_number":"+1","status":"x"}],"errors":[{"code":{}}]}}}`, wantErr: "neither a string nor a number"},
		{name: "inbound without from", body: `{"data":{"event_type":"message.received","payload":{"id":"m-1","to":[{"phone_number":"+15551234567"}],"text":"hi"}}}`, wantErr: "payload.from.phone_number"},
		{name: "inbound without to", body: `{"data":{"event_type":"message.received","payload":{"id":"m-1","from":{"phone_number":"+15557654321"},"text":"hi"}}}`, wantErr: "payload.to[0].phone_number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := ParseEvent([]byte(tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseEvent = %+v, %v; want an error containing %q", ev, err, tt.wantErr)
			}
		})
	}
}
