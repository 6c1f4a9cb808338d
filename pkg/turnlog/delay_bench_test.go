package turnlog_test

import (
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
)

// BenchmarkHTTPTurnsOverDelay: the demo's lookup turn over HTTP on one node, on
// SQLite and on PostgreSQL reached through a delay line of 0, 0.5 and 1 ms each way
// (a database across a network), side by side in one run: the p50 of one session's
// turns one after another, the turns/s of 50 sessions at once, and the round trips a
// turn makes.
func BenchmarkHTTPTurnsOverDelay(b *testing.B) {
	for _, c := range []struct {
		store string
		delay time.Duration
	}{{"sqlite", 0}, {"postgres", 0}, {"postgres", 500 * time.Microsecond}, {"postgres", time.Millisecond}} {
		for _, sessions := range []int{1, 50} {
			name := fmt.Sprintf("%s/delay=%gms/sessions=%d", c.store, float64(c.delay)/float64(time.Millisecond), sessions)
			if c.store == "sqlite" {
				name = fmt.Sprintf("sqlite/sessions=%d", sessions)
			}
			b.Run(name, func(b *testing.B) {
				db := filepath.Join(b.TempDir(), "turnlog.db")
				if c.store == "postgres" {
					db = postgres.TestSchemaDSN(b)
					if c.delay > 0 {
						u, err := url.Parse(db)
						if err != nil {
							b.Fatal(err)
						}
						db = startDelayLine(b, u.Host, c.delay).through(b, db)
					}
				}
				url, tl := benchNode(b, db)
				benchTurnsOver(b, []string{url}, sessions, true, func() (int64, int64) {
					if s, ok := tl.Store.(*postgres.Store); ok {
						return s.RoundTrips(), s.Notifies()
					}
					return 0, 0
				})
			})
		}
	}
}
