package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// commitsChannel is the channel every append notifies with its session's id at
// commit, so that readers following a session on any node wake.
const commitsChannel = "turnlog_commits"

// listen wakes this node's watchers when any node commits to their session, until
// ctx ends. A lost connection is made again, and every watcher is woken then to
// catch up on what was missed meanwhile.
func (s *Store) listen(ctx context.Context, dsn string) {
	wait := 100 * time.Millisecond
	var once sync.Once
	for ctx.Err() == nil {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+commitsChannel)
		}
		if err == nil {
			wait = 100 * time.Millisecond
			once.Do(func() { close(s.listening) })
			s.watch.NotifyAll()
			for {
				n, err := conn.WaitForNotification(ctx)
				if err != nil {
					break
				}
				s.watch.Notify(map[string]int64{n.Payload: 0})
			}
		}
		if conn != nil {
			conn.Close(context.Background())
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
