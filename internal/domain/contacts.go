package domain

import "time"

// Contact is an entry of an account's team address book (issue 33): a name
// for one or more numbers. The JSON form is the public API's Contact and the
// AccountContacts event's contact.
type Contact struct {
	ID        int64           `json:"id"`
	AccountID int64           `json:"-"`
	Name      string          `json:"name"`
	Company   string          `json:"company"`
	Email     string          `json:"email"`
	Notes     string          `json:"notes"`
	Tags      []string        `json:"tags"`
	Numbers   []ContactNumber `json:"numbers"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	// Search is the contact's name and company words as the store matches
	// a query against them (contacts.SearchText builds it).
	Search string `json:"-"`
}

// ContactNumber is one of a contact's numbers: digits with the country code,
// as the send path normalizes a number, and a free label ("mobile").
type ContactNumber struct {
	Number string `json:"number"`
	Label  string `json:"label"`
}

// ContactRef names the contact that holds a number, where an answer about
// that number (a conversation, a call) shows who it is.
type ContactRef struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// EventAccountContacts is the address book's event type, beside
// AccountConversations (docs/decisions.md, "Contacts").
const EventAccountContacts = "AccountContacts"

// The events of an AccountContacts payload.
const (
	ContactCreated = "contact.created"
	ContactUpdated = "contact.updated"
	ContactDeleted = "contact.deleted"
)

// ContactEvent is the payload of an AccountContacts event: what happened,
// who did it (By: the user, nil for an API key) and the contact after the
// change (as it was, for a deletion).
type ContactEvent struct {
	Event   string  `json:"event"`
	By      *int64  `json:"by"`
	Contact Contact `json:"contact"`
}
