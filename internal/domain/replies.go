package domain

import "time"

// Template is a saved reply. It belongs to one user; UserID 0 is the
// account's integrations (API keys), which have no person. A shared one is
// the whole account's (a team reply), and UserID is who wrote it.
type Template struct {
	ID        int64
	AccountID int64
	UserID    int64
	Shared    bool
	Title     string
	Body      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Draft is an unsent message kept under a key its owner chose. Owned like a
// Template.
type Draft struct {
	AccountID int64
	UserID    int64
	Key       string
	Message   string
	UpdatedAt time.Time
}

// BlockedSender is a number a line's team no longer wants to hear from: its
// texts to the line are kept but marked blocked. It is not the STOP list.
type BlockedSender struct {
	LineID    int64
	Line      string
	Number    string
	Reason    string
	BlockedAt time.Time
}

// HostedMedia is an attachment uploaded on its own, to be referenced later
// by URL (a scheduled message's media).
type HostedMedia struct {
	Name        string // the blob's name
	AccountID   int64
	ContentType string
	Size        int64
	CreatedBy   int64 // 0 for an API key
	CreatedAt   time.Time
}
