package events

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is one of the small set of error codes turnlog reports. HTTPStatus is the one
// table of the HTTP statuses its transports (the API, the inspector) answer them with.
type Code string

const (
	CodeInvalid            Code = "invalid"
	CodeNotFound           Code = "not_found"
	CodeConflict           Code = "conflict"
	CodePolicyDenied       Code = "policy_denied"
	CodeNondeterminism     Code = "nondeterminism"
	CodeToolOutcomeUnknown Code = "tool_outcome_unknown"
	CodeMaxTurns           Code = "max_turns_exceeded"
	CodeToolCallCap        Code = "tool_call_cap_exceeded"
	CodeLoopDetected       Code = "loop_detected"
	CodeModelFailed        Code = "model_failed"
	// CodeInvalidModelOutput: the model answered what turnlog's log cannot keep
	// (see StoreLimits); nothing of the answer was recorded.
	CodeInvalidModelOutput Code = "invalid_model_output"
	CodeCorruptLog         Code = "corrupt_log"
	CodeSchemaTooNew       Code = "schema_too_new"
	CodeCanceled           Code = "canceled"
	CodeInternal           Code = "internal"
	CodeContextOverflow    Code = "context_overflow"
	// CodeShuttingDown refuses new work while the server stops: try again once it is
	// back, or on another node.
	CodeShuttingDown Code = "shutting_down"
	// CodeStorageFull and CodeStorageFailed say the database could not write (its
	// disk is full; an I/O error): nothing of the request was written, and it may be
	// sent again once the store takes writes again.
	CodeStorageFull   Code = "storage_full"
	CodeStorageFailed Code = "storage_failed"
	// CodeRevertConflict: paths a revert would put back were changed since; nothing
	// was changed (the conflicts are named).
	CodeRevertConflict Code = "revert_conflict"
)

// Error is a typed error with a code, a message meant for people, and optionally the
// field or path it is about.
type Error struct {
	Code    Code
	Message string
	Field   string
	Err     error
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Public is the message as a client may read it: the field and message, and what
// a typed cause says, but never the text of an untyped cause (a driver's error, SQL,
// a path inside turnlog), which stays in Error for the server's log.
func (e *Error) Public() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	var inner *Error
	if e.Err != nil && errors.As(e.Err, &inner) {
		msg += ": " + inner.Public()
	}
	return msg
}

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldError builds an *Error about a named field or path.
func FieldError(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of the first *Error in err's chain, or CodeInternal.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// IsCode reports whether err carries the given code.
func IsCode(err error, code Code) bool { return err != nil && CodeOf(err) == code }

// CodeIdempotencyMismatch: an Idempotency-Key used again with another body or route.
const CodeIdempotencyMismatch Code = "idempotency_mismatch"

// HTTPStatus is the status every HTTP transport of turnlog answers an error of code
// with: what a request asked wrongly is 4xx, what the server could not do is 5xx.
func HTTPStatus(code Code) int {
	switch code {
	case CodeInvalid:
		return http.StatusBadRequest
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict, CodeRevertConflict:
		return http.StatusConflict
	case CodePolicyDenied:
		return http.StatusForbidden
	case CodeIdempotencyMismatch:
		return http.StatusUnprocessableEntity
	case CodeShuttingDown, CodeStorageFailed:
		return http.StatusServiceUnavailable
	case CodeStorageFull:
		return http.StatusInsufficientStorage
	}
	return http.StatusInternalServerError
}
