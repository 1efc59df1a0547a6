package smpp

import "strings"

// Receipt is a delivery receipt: a deliver_sm whose esm_class says SMSC
// delivery receipt (or intermediate notification).
type Receipt struct {
	// MessageID is the message_id the SMSC gave the submit: the
	// receipted_message_id parameter when present, else the receipt text's
	// "id:" word. Some SMSCs give it in hexadecimal in one place and decimal
	// in the other; it is passed as it came.
	MessageID string
	// Stat is the SMSC's own status word, unmapped: the text's "stat:"
	// (DELIVRD, UNDELIV, ...), or, when the text has none, the word for
	// the message_state parameter in the same vocabulary.
	Stat string
	// Err is the text's "err:" word (network-specific), empty when absent.
	Err string
	// State is the message_state parameter, 0 when absent.
	State        byte
	Intermediate bool
	// Source is the receipt's source_addr: the handset the message went to.
	Source, Dest Address
	// Text is the receipt's short message (or message_payload) as text.
	Text string
}

// messageStateStat names message_state values (section 5.3.2.35) in the
// receipt text's vocabulary (Appendix B).
var messageStateStat = map[byte]string{
	1: "ENROUTE", 2: "DELIVRD", 3: "EXPIRED", 4: "DELETED",
	5: "UNDELIV", 6: "ACCEPTD", 7: "UNKNOWN", 8: "REJECTD",
}

// IsReceipt reports whether a deliver_sm is a report on a submitted
// message rather than a text from a handset.
func IsReceipt(sm *SM) bool { return sm.ESMClass&esmMessageTypeMask != 0 }

// ParseReceipt reads a receipt's fields from a deliver_sm. The text has no
// formal syntax (Appendix B is "an example"); the words are read as
// key:value pairs separated by spaces, case-insensitively, the first of
// each key winning, so the original text quoted after "text:" cannot
// override them.
func ParseReceipt(sm *SM) Receipt {
	body, _, _ := userData(sm)
	r := Receipt{
		Source:       sm.Source,
		Dest:         sm.Dest,
		Text:         DecodeText(sm.DataCoding, body),
		Intermediate: sm.ESMClass&esmMessageTypeMask == ESMClassIntermediate,
	}
	words := strings.Fields(r.Text)
	var id, stat, errWord string
	for i, w := range words {
		k, v, ok := strings.Cut(w, ":")
		if !ok {
			continue
		}
		if v == "" && i+1 < len(words) && !strings.Contains(words[i+1], ":") {
			v = words[i+1] // "id: 123"
		}
		switch strings.ToLower(k) {
		case "id":
			if id == "" {
				id = v
			}
		case "stat":
			if stat == "" {
				stat = v
			}
		case "err":
			if errWord == "" {
				errWord = v
			}
		case "text":
			// the original text follows; nothing after it is a field
			goto done
		}
	}
done:
	r.MessageID, r.Stat, r.Err = id, stat, errWord
	if v, ok := sm.TLVs.CString(TagReceiptedMessageID); ok && v != "" {
		r.MessageID = v
	}
	if v, ok := sm.TLVs.Get(TagMessageState); ok && len(v) == 1 {
		r.State = v[0]
		if r.Stat == "" {
			r.Stat = messageStateStat[v[0]]
		}
	}
	return r
}
