package domain

import (
	"errors"
	"fmt"
)

// Code is a stable error type from the public API's error table. Clients branch on it.
type Code string

// The error types of the public API. New values may appear; none is repurposed.
const (
	Invalid           Code = "invalid_request"
	Unauthenticated   Code = "unauthenticated"
	InsufficientScope Code = "insufficient_scope"
	PermissionDenied  Code = "permission_denied"
	NotFound          Code = "not_found"
	Conflict          Code = "conflict"
	Unsupported       Code = "unsupported"
	RateLimited       Code = "rate_limited"
	Unavailable       Code = "unavailable"
	Internal          Code = "internal_error"
)

// Error is the one error type that crosses layers. Message is safe to show to
// the client; anything else stays in the wrapped cause and the log.
type Error struct {
	Code    Code
	Message string
	// Scope names the missing scope on InsufficientScope.
	Scope string
	// Status overrides the HTTP status the code maps to (the spec uses 422 with
	// invalid_request for unpriced destinations).
	Status int
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an *Error with a formatted, client-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the Code of err, or Internal when err is not an *Error.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// IsNotFound reports whether err is a not_found error.
func IsNotFound(err error) bool { return err != nil && ErrorCode(err) == NotFound }
