package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// commitsChannel is the channel each node's notifier tells of the sessions its
// appends committed to, so that readers following a session on any node wake;
// cancelsChannel carries cancels to the node that runs the turn.
const (
	commitsChannel = "turnlog_commits"
	cancelsChannel = "turnlog_cancels"
)

// relayedCancel is a cancel on cancelsChannel. Scope is the schema of the store
// that sent it: notifications are heard by the whole database, and a store heeds only
// its own schema's.
type relayedCancel struct {
	Scope   string `json:"scope"`
	Session string `json:"session"`
	Turn    string `json:"turn"`
	Reason  string `json:"reason"`
}

// RelayCancel passes a cancel to every node; the one that runs the turn stops it.
func (s *Store) RelayCancel(ctx context.Context, session, turn, reason string) error {
	payload, _ := json.Marshal(relayedCancel{s.scope, session, turn, reason})
	_, err := s.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, cancelsChannel, string(payload))
	return err
}

// OnCancel registers what this node does with a cancel another node relays.
func (s *Store) OnCancel(f func(session, turn, reason string)) { s.onCancel.Store(&f) }

// listen wakes this node's watchers when any node commits to their session, until
// ctx ends. A lost connection is made again, and every watcher is woken then to
// catch up on what was missed meanwhile.
func (s *Store) listen(ctx context.Context, dsn string) {
	wait := 100 * time.Millisecond
	var once sync.Once
	for ctx.Err() == nil {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+commitsChannel+"; LISTEN "+cancelsChannel)
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
				if n.Channel == cancelsChannel {
					s.heardCancel(n.Payload)
					continue
				}
				if scope, session, ok := strings.Cut(n.Payload, "/"); ok && scope == s.scope {
					s.watch.Notify(map[string]int64{session: 0})
				}
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

func (s *Store) heardCancel(payload string) {
	var c relayedCancel
	f := s.onCancel.Load()
	if f == nil || json.Unmarshal([]byte(payload), &c) != nil || c.Scope != s.scope {
		return
	}
	(*f)(c.Session, c.Turn, c.Reason)
}
