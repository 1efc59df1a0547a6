package twilio

import (
	"fmt"
	"net/url"
	"strconv"
)

// maxMedia bounds NumMedia; Twilio delivers at most 10 media per message.
const maxMedia = 100

// Status is a message status callback: Twilio posts one to the message's
// StatusCallback each time the status of a message sent with Send changes.
type Status struct {
	MessageSID string // MessageSid, as Send returned it
	// Status is MessageStatus as Twilio words it (accepted, scheduled,
	// queued, sending, sent, delivered, undelivered, failed, read,
	// canceled, or one added since), passed through unmapped.
	Status              string
	ErrorCode           int    // ErrorCode, when the message failed; 0 otherwise
	From, To            string // as Twilio wrote them
	AccountSID          string // AccountSid
	MessagingServiceSID string // MessagingServiceSid, when one was used
	RawDlrDoneDate      string // RawDlrDoneDate, the carrier's "YYMMDDhhmm", when it gave one
}

// Inbound is a message someone sent to one of the account's numbers, as
// Twilio posts it to the number's messaging webhook.
type Inbound struct {
	MessageSID          string // MessageSid
	AccountSID          string // AccountSid
	MessagingServiceSID string // MessagingServiceSid, when the number is in a service
	From, To            string // the sender; the account's number
	Body                string
	NumSegments         int // NumSegments, when given; 0 otherwise
	Media               []Media
}

// Media is one attachment of an inbound MMS, which Twilio serves at URL.
type Media struct {
	URL         string // MediaUrlN
	ContentType string // MediaContentTypeN
}

// ParseStatus reads a status callback's form, as VerifyRequest returned
// it. MessageSid and MessageStatus are required (the older SmsSid and
// SmsStatus stand in for them when they are absent); ErrorCode, when
// present, must be a number.
func ParseStatus(form url.Values) (Status, error) {
	s := Status{
		MessageSID:          first(form, "MessageSid", "SmsSid"),
		Status:              first(form, "MessageStatus", "SmsStatus"),
		From:                form.Get("From"),
		To:                  form.Get("To"),
		AccountSID:          form.Get("AccountSid"),
		MessagingServiceSID: form.Get("MessagingServiceSid"),
		RawDlrDoneDate:      form.Get("RawDlrDoneDate"),
	}
	switch {
	case s.MessageSID == "":
		return Status{}, fmt.Errorf("twilio: status callback without MessageSid")
	case s.Status == "":
		return Status{}, fmt.Errorf("twilio: status callback for %s without MessageStatus", clip(s.MessageSID, 40))
	}
	if code := form.Get("ErrorCode"); code != "" {
		n, err := strconv.Atoi(code)
		if err != nil || n < 0 {
			return Status{}, fmt.Errorf("twilio: status callback for %s with ErrorCode %q, not a number", clip(s.MessageSID, 40), clip(code, 20))
		}
		s.ErrorCode = n
	}
	return s, nil
}

// ParseInbound reads an incoming message's form, as VerifyRequest
// returned it. MessageSid, From and To are required; Body may be empty
// when media came. NumMedia, when present, must be a number and each of
// MediaUrl0 … MediaUrl(NumMedia-1) present; when absent, the consecutive
// MediaUrlN from 0 are taken.
func ParseInbound(form url.Values) (Inbound, error) {
	in := Inbound{
		MessageSID:          first(form, "MessageSid", "SmsMessageSid", "SmsSid"),
		AccountSID:          form.Get("AccountSid"),
		MessagingServiceSID: form.Get("MessagingServiceSid"),
		From:                form.Get("From"),
		To:                  form.Get("To"),
		Body:                form.Get("Body"),
	}
	switch {
	case in.MessageSID == "":
		return Inbound{}, fmt.Errorf("twilio: incoming message without MessageSid")
	case in.From == "":
		return Inbound{}, fmt.Errorf("twilio: incoming message %s without From", clip(in.MessageSID, 40))
	case in.To == "":
		return Inbound{}, fmt.Errorf("twilio: incoming message %s without To", clip(in.MessageSID, 40))
	}
	if s := form.Get("NumSegments"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return Inbound{}, fmt.Errorf("twilio: incoming message %s with NumSegments %q, not a number", clip(in.MessageSID, 40), clip(s, 20))
		}
		in.NumSegments = n
	}
	count := -1 // absent: take MediaUrlN while present
	if form.Has("NumMedia") {
		s := form.Get("NumMedia")
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > maxMedia {
			return Inbound{}, fmt.Errorf("twilio: incoming message %s with NumMedia %q, not a number from 0 to %d", clip(in.MessageSID, 40), clip(s, 20), maxMedia)
		}
		count = n
	}
	limit := count
	if count < 0 {
		limit = maxMedia
	}
	for i := range limit {
		n := strconv.Itoa(i)
		u := form.Get("MediaUrl" + n)
		if u == "" {
			if count < 0 {
				break
			}
			return Inbound{}, fmt.Errorf("twilio: incoming message %s with NumMedia %d but no MediaUrl%d", clip(in.MessageSID, 40), count, i)
		}
		in.Media = append(in.Media, Media{URL: u, ContentType: form.Get("MediaContentType" + n)})
	}
	return in, nil
}

// first returns the value of the first of names present in form.
func first(form url.Values, names ...string) string {
	for _, name := range names {
		if v := form.Get(name); v != "" {
			return v
		}
	}
	return ""
}
