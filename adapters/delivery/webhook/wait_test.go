package webhook

import (
	"errors"
	"math"
	"testing"
	"time"
)

// TestBackoffDoublesToItsCap: the waits double from Backoff and stop at MaxBackoff,
// however many attempts and however large the cap (no overflow into a negative wait).
func TestBackoffDoublesToItsCap(t *testing.T) {
	h := Hook{Backoff: time.Second, MaxBackoff: 10 * time.Second}
	for attempts, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 1000: 10 * time.Second} {
		if got := h.wait(attempts); got != want {
			t.Errorf("after %d attempts: %s, want %s", attempts, got, want)
		}
	}
	huge := Hook{Backoff: time.Second, MaxBackoff: math.MaxInt64}
	for _, attempts := range []int{40, 63, 64, 100, 10000} {
		if got := huge.wait(attempts); got <= 0 {
			t.Errorf("after %d attempts with a huge cap: %s", attempts, got)
		}
	}
}

// TestRunWaitsAfterAnOutboxError: after the outbox itself fails, Run waits a whole
// poll before it looks again, even when a delivery is due (no busy loop).
func TestRunWaitsAfterAnOutboxError(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		err  error
		next time.Time
		due  bool
		want time.Duration
	}{
		{errors.New("disk I/O error"), now.Add(-time.Hour), true, time.Second},
		{nil, now.Add(-time.Hour), true, 0},
		{nil, now.Add(300 * time.Millisecond), true, 300 * time.Millisecond},
		{nil, now.Add(time.Hour), true, time.Second},
		{nil, time.Time{}, false, time.Second},
	} {
		if got := waitFor(tc.err, tc.next, tc.due, now, time.Second); got != tc.want {
			t.Errorf("%+v: waits %s, want %s", tc, got, tc.want)
		}
	}
}
