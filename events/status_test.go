package events_test

import (
	"testing"

	"github.com/turnlog/turnlog/events"
)

// TestEveryCodeHasOneHTTPStatus: the statuses the API and the inspector answer a code
// with come from one table; what the store could not write is 5xx, never a 500 the
// client cannot tell from a bug.
func TestEveryCodeHasOneHTTPStatus(t *testing.T) {
	for code, want := range map[events.Code]int{
		events.CodeInvalid: 400, events.CodeNotFound: 404, events.CodeConflict: 409, events.CodePolicyDenied: 403,
		events.CodeIdempotencyMismatch: 422, events.CodeShuttingDown: 503, events.CodeStorageFailed: 503,
		events.CodeStorageFull: 507, events.CodeInternal: 500, events.CodeInvalidModelOutput: 500,
	} {
		if got := events.HTTPStatus(code); got != want {
			t.Errorf("%s: %d, want %d", code, got, want)
		}
	}
}
