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

// Kind refines a Code where the API tells apart cases that share an error
// type (the spec answers several of them with invalid_request). The HTTP
// layer maps Code and Kind to a status in one place (httpapi/respond.go);
// nothing below it knows about statuses.
type Kind uint8

// Kinds. The zero value means the Code says it all.
const (
	Plain Kind = iota
	// Unprocessable: the request is well formed but cannot be carried out as
	// it stands (no rate applies to a destination, an Idempotency-Key reused
	// with another request).
	Unprocessable
	// TooLarge: the request is bigger than the operation accepts.
	TooLarge
	// MethodNotAllowed: the resource exists but does not offer the operation.
	MethodNotAllowed
	// NotAcceptable: the request's Accept header refuses every media type
	// the operation answers with (GET /events answers text/event-stream).
	NotAcceptable
)

// Error is the one error type that crosses layers. Message is safe to show to
// the client; anything else stays in the wrapped cause and the log.
type Error struct {
	Code    Code
	Kind    Kind
	Message string
	// Scope names the missing scope on InsufficientScope.
	Scope string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an *Error with a formatted, client-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unprocessablef builds an invalid_request *Error of kind Unprocessable.
func Unprocessablef(format string, args ...any) *Error {
	return &Error{Code: Invalid, Kind: Unprocessable, Message: fmt.Sprintf(format, args...)}
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

// NothingHappened reports whether err promises that nothing was created or
// charged and a retry may run the request again (internal_error and
// unavailable; any error that is not an *Error counts as internal_error).
func NothingHappened(err error) bool {
	c := ErrorCode(err)
	return c == Internal || c == Unavailable
}
