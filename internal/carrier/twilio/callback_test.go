package twilio

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// with returns a copy of form with the given fields set, or removed when
// the value is nil.
func with(form url.Values, fields map[string][]string) url.Values {
	out := url.Values{}
	for k, v := range form {
		out[k] = v
	}
	for k, v := range fields {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		form    url.Values
		want    Status
		wantErr string
	}{
		{
			name: "delivered",
			form: statusForm,
			want: Status{MessageSID: testSID, Status: "delivered", From: "+15551234567", To: "+15557654321", AccountSID: testAccountSID, RawDlrDoneDate: "2508240501"},
		},
		{
			name: "undelivered with an error code, through a service",
			form: with(statusForm, map[string][]string{
				"MessageStatus": {"undelivered"}, "SmsStatus": {"undelivered"}, "ErrorCode": {"30003"},
				"MessagingServiceSid": {testServiceSID}, "RawDlrDoneDate": nil,
			}),
			want: Status{MessageSID: testSID, Status: "undelivered", ErrorCode: 30003, From: "+15551234567", To: "+15557654321", AccountSID: testAccountSID, MessagingServiceSID: testServiceSID},
		},
		{
			name: "a status added since passes through",
			form: with(statusForm, map[string][]string{"MessageStatus": {"partially_delivered"}, "RawDlrDoneDate": nil}),
			want: Status{MessageSID: testSID, Status: "partially_delivered", From: "+15551234567", To: "+15557654321", AccountSID: testAccountSID},
		},
		{
			name: "only the older Sms fields",
			form: url.Values{"SmsSid": {testSID}, "SmsStatus": {"sent"}},
			want: Status{MessageSID: testSID, Status: "sent"},
		},
		{name: "no MessageSid", form: with(statusForm, map[string][]string{"MessageSid": nil, "SmsSid": nil}), wantErr: "without MessageSid"},
		{name: "no MessageStatus", form: with(statusForm, map[string][]string{"MessageStatus": nil, "SmsStatus": nil}), wantErr: "without MessageStatus"},
		{name: "ErrorCode not a number", form: with(statusForm, map[string][]string{"ErrorCode": {"30003x"}}), wantErr: `ErrorCode "30003x", not a number`},
		{name: "empty form", form: url.Values{}, wantErr: "without MessageSid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatus(tt.form)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseStatus: %+v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// inboundForm is an incoming MMS as Twilio posts it.
var inboundForm = url.Values{
	"ToCountry": {"US"}, "ToState": {"CA"}, "SmsMessageSid": {"MM0123456789abcdef0123456789abcdef"},
	"NumMedia": {"2"}, "ToCity": {""}, "FromZip": {""}, "SmsSid": {"MM0123456789abcdef0123456789abcdef"},
	"FromState": {"NY"}, "SmsStatus": {"received"}, "FromCity": {""},
	"Body":        {"Look: ünïcode ✓ 😀 & +"},
	"FromCountry": {"US"}, "To": {"+15551234567"}, "ToZip": {""}, "NumSegments": {"1"},
	"MessageSid": {"MM0123456789abcdef0123456789abcdef"}, "AccountSid": {testAccountSID},
	"From": {"+15557654321"}, "ApiVersion": {"2010-04-01"},
	"MediaUrl0":         {"https://api.twilio.com/2010-04-01/Accounts/" + testAccountSID + "/Messages/MM0123456789abcdef0123456789abcdef/Media/ME00000000000000000000000000000000"},
	"MediaContentType0": {"image/jpeg"},
	"MediaUrl1":         {"https://api.twilio.com/2010-04-01/Accounts/" + testAccountSID + "/Messages/MM0123456789abcdef0123456789abcdef/Media/ME11111111111111111111111111111111"},
	"MediaContentType1": {"video/mp4"},
}

func TestParseInbound(t *testing.T) {
	t.Parallel()
	media := []Media{
		{URL: inboundForm.Get("MediaUrl0"), ContentType: "image/jpeg"},
		{URL: inboundForm.Get("MediaUrl1"), ContentType: "video/mp4"},
	}
	base := Inbound{
		MessageSID: "MM0123456789abcdef0123456789abcdef", AccountSID: testAccountSID,
		From: "+15557654321", To: "+15551234567", Body: "Look: ünïcode ✓ 😀 & +", NumSegments: 1,
	}
	withMedia := func(in Inbound, m []Media) Inbound { in.Media = m; return in }
	tests := []struct {
		name    string
		form    url.Values
		want    Inbound
		wantErr string
	}{
		{name: "MMS with two media", form: inboundForm, want: withMedia(base, media)},
		{
			name: "SMS",
			form: with(inboundForm, map[string][]string{"NumMedia": {"0"}, "MediaUrl0": nil, "MediaContentType0": nil, "MediaUrl1": nil, "MediaContentType1": nil}),
			want: base,
		},
		{
			name: "NumMedia counts, not the fields present",
			form: with(inboundForm, map[string][]string{"NumMedia": {"1"}}),
			want: withMedia(base, media[:1]),
		},
		{
			name: "no NumMedia: the MediaUrlN present",
			form: with(inboundForm, map[string][]string{"NumMedia": nil}),
			want: withMedia(base, media),
		},
		{
			name: "media only, through a service",
			form: with(inboundForm, map[string][]string{"Body": {""}, "MessagingServiceSid": {testServiceSID}, "NumSegments": nil}),
			want: func() Inbound {
				in := withMedia(base, media)
				in.Body, in.MessagingServiceSID, in.NumSegments = "", testServiceSID, 0
				return in
			}(),
		},
		{name: "no MessageSid", form: with(inboundForm, map[string][]string{"MessageSid": nil, "SmsMessageSid": nil, "SmsSid": nil}), wantErr: "without MessageSid"},
		{name: "no From", form: with(inboundForm, map[string][]string{"From": nil}), wantErr: "without From"},
		{name: "no To", form: with(inboundForm, map[string][]string{"To": {""}}), wantErr: "without To"},
		{name: "a MediaUrl missing", form: with(inboundForm, map[string][]string{"NumMedia": {"3"}}), wantErr: "NumMedia 3 but no MediaUrl2"},
		{name: "NumMedia not a number", form: with(inboundForm, map[string][]string{"NumMedia": {"two"}}), wantErr: `NumMedia "two"`},
		{name: "NumMedia negative", form: with(inboundForm, map[string][]string{"NumMedia": {"-1"}}), wantErr: `NumMedia "-1"`},
		{name: "NumMedia huge", form: with(inboundForm, map[string][]string{"NumMedia": {"100000"}}), wantErr: `NumMedia "100000"`},
		{name: "NumSegments not a number", form: with(inboundForm, map[string][]string{"NumSegments": {"1.5"}}), wantErr: `NumSegments "1.5"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseInbound(tt.form)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseInbound: %+v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
