package smpp

import "fmt"

// Status is a command_status (SMPP 3.4 section 5.1.3). A response with a
// status other than StatusOK is an error, so Status implements error and
// errors.Is(err, StatusThrottled) tells a throttled submit from others.
type Status uint32

// The statuses an ESME meets in practice. Others keep their number.
const (
	StatusOK               Status = 0x00000000 // ESME_ROK
	StatusInvalidMsgLen    Status = 0x00000001 // ESME_RINVMSGLEN
	StatusInvalidCmdLen    Status = 0x00000002 // ESME_RINVCMDLEN
	StatusInvalidCmdID     Status = 0x00000003 // ESME_RINVCMDID
	StatusInvalidBindState Status = 0x00000004 // ESME_RINVBNDSTS
	StatusAlreadyBound     Status = 0x00000005 // ESME_RALYBND
	StatusSystemError      Status = 0x00000008 // ESME_RSYSERR
	StatusInvalidSource    Status = 0x0000000A // ESME_RINVSRCADR
	StatusInvalidDest      Status = 0x0000000B // ESME_RINVDSTADR
	StatusInvalidMsgID     Status = 0x0000000C // ESME_RINVMSGID
	StatusBindFailed       Status = 0x0000000D // ESME_RBINDFAIL
	StatusInvalidPassword  Status = 0x0000000E // ESME_RINVPASWD
	StatusInvalidSystemID  Status = 0x0000000F // ESME_RINVSYSID
	StatusMsgQueueFull     Status = 0x00000014 // ESME_RMSGQFUL
	StatusInvalidESMClass  Status = 0x00000043 // ESME_RINVESMCLASS
	StatusSubmitFailed     Status = 0x00000045 // ESME_RSUBMITFAIL
	StatusInvalidSystemTyp Status = 0x00000053 // ESME_RINVSYSTYP
	StatusThrottled        Status = 0x00000058 // ESME_RTHROTTLED
	StatusTempAppError     Status = 0x00000064 // ESME_RX_T_APPN
	StatusPermAppError     Status = 0x00000065 // ESME_RX_P_APPN
	StatusInvalidTLVStream Status = 0x000000C0 // ESME_RINVOPTPARSTREAM
	StatusUnknownError     Status = 0x000000FF // ESME_RUNKNOWNERR
)

var statusNames = map[Status]string{
	StatusOK:               "ESME_ROK",
	StatusInvalidMsgLen:    "ESME_RINVMSGLEN",
	StatusInvalidCmdLen:    "ESME_RINVCMDLEN",
	StatusInvalidCmdID:     "ESME_RINVCMDID",
	StatusInvalidBindState: "ESME_RINVBNDSTS",
	StatusAlreadyBound:     "ESME_RALYBND",
	StatusSystemError:      "ESME_RSYSERR",
	StatusInvalidSource:    "ESME_RINVSRCADR",
	StatusInvalidDest:      "ESME_RINVDSTADR",
	StatusInvalidMsgID:     "ESME_RINVMSGID",
	StatusBindFailed:       "ESME_RBINDFAIL",
	StatusInvalidPassword:  "ESME_RINVPASWD",
	StatusInvalidSystemID:  "ESME_RINVSYSID",
	StatusMsgQueueFull:     "ESME_RMSGQFUL",
	StatusInvalidESMClass:  "ESME_RINVESMCLASS",
	StatusSubmitFailed:     "ESME_RSUBMITFAIL",
	StatusInvalidSystemTyp: "ESME_RINVSYSTYP",
	StatusThrottled:        "ESME_RTHROTTLED",
	StatusTempAppError:     "ESME_RX_T_APPN",
	StatusPermAppError:     "ESME_RX_P_APPN",
	StatusInvalidTLVStream: "ESME_RINVOPTPARSTREAM",
	StatusUnknownError:     "ESME_RUNKNOWNERR",
}

// String is the specification's name with the number, e.g.
// "ESME_RTHROTTLED (0x00000058)", or the number alone for other values.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return fmt.Sprintf("%s (0x%08X)", n, uint32(s))
	}
	return fmt.Sprintf("command_status 0x%08X", uint32(s))
}

func (s Status) Error() string { return "smpp: " + s.String() }

// Retryable reports whether the SMSC refused for now, not for good: it is
// throttling this ESME or its queue is full. The same PDU may be submitted
// again later; nothing was taken.
func (s Status) Retryable() bool {
	return s == StatusThrottled || s == StatusMsgQueueFull
}

// StatusError is a response that carried a status other than StatusOK. It
// unwraps to its Status.
type StatusError struct {
	Command CommandID // the request that was refused
	Status  Status
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("smpp: %s refused: %s", e.Command, e.Status.String())
}

func (e *StatusError) Unwrap() error { return e.Status }

// Retryable is [Status.Retryable].
func (e *StatusError) Retryable() bool { return e.Status.Retryable() }
