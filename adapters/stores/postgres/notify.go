package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Other nodes' listeners hear of this store's commits from a notifier of its own,
// after each commit and off the append's path. A NOTIFY in the append's transaction
// would hold the database's notify lock from its commit until its WAL is flushed, and
// every other notifying commit would wait behind it: the appends of all sessions in
// one line, one fsync at a time. The notifier sends what was committed since its last
// statement as one statement, on a connection of its own, at synchronous_commit off (a
// notification is no state to keep), so one node's notifies never wait for a flush.
//
// A node killed between a commit and its notify leaves the other nodes' readers of
// that session to wake at its next commit (another node's recovery makes one).

// notifier is the sessions committed to and not yet notified.
type notifier struct {
	mu      sync.Mutex
	pending map[string]struct{}
	wake    chan struct{} // holds one wake-up while sessions wait
	sent    atomic.Int64  // statements sent
	done    chan struct{} // closed once the notifier has stopped
}

func newNotifier() *notifier {
	return &notifier{pending: map[string]struct{}{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// add marks session committed to: the next statement notifies it.
func (n *notifier) add(session string) {
	n.mu.Lock()
	n.pending[session] = struct{}{}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// take empties what waits, as payloads of scope.
func (n *notifier) take(scope string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.pending))
	for session := range n.pending {
		out = append(out, scope+"/"+session)
	}
	clear(n.pending)
	return out
}

// putBack keeps payloads that could not be sent, for the next connection.
func (n *notifier) putBack(scope string, payloads []string) {
	n.mu.Lock()
	for _, p := range payloads {
		n.pending[p[len(scope)+1:]] = struct{}{}
	}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// notifyBatch is one statement that notifies every payload of $2 on $1.
const notifyBatch = `SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) AS p`

// notify sends what commits add, until ctx ends; then what is still pending goes out
// once more (a store closing lets its last commits be heard). A lost connection is
// made again and the batch it lost sent on the next. A send is not cut short by ctx:
// it is bounded by sendPatience.
func (s *Store) notify(ctx context.Context, dsn string) {
	n := s.notes
	defer close(n.done)
	wait := 100 * time.Millisecond
	for {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			_, err = conn.Exec(ctx, `SET synchronous_commit = off`)
		}
		if err == nil {
			wait = 100 * time.Millisecond
		}
		for err == nil {
			stopping := false
			select {
			case <-ctx.Done():
				stopping = true
			case <-n.wake:
			}
			if batch := n.take(s.scope); len(batch) > 0 {
				n.sent.Add(1)
				send, cancel := context.WithTimeout(context.Background(), sendPatience)
				_, err = conn.Exec(send, notifyBatch, commitsChannel, batch)
				cancel()
				if err != nil {
					n.putBack(s.scope, batch)
				}
			}
			if stopping {
				conn.Close(context.Background())
				return
			}
		}
		if conn != nil {
			conn.Close(context.Background())
		}
		select {
		case <-ctx.Done():
			s.lastNotify(dsn) // closing before a connection held: what waits still goes out
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// lastNotify sends what is pending on a connection of its own, once, within
// sendPatience: for a store that closes before its notifier's connection was made.
func (s *Store) lastNotify(dsn string) {
	batch := s.notes.take(s.scope)
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sendPatience)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, notifyBatch, commitsChannel, batch); err == nil {
		s.notes.sent.Add(1)
	}
}

// sendPatience bounds one notify statement.
const sendPatience = 10 * time.Second

// Notifies is how many statements the store's notifier has sent: each tells the
// other nodes of every session committed to since the one before, off the appends'
// path (on a connection of its own, not the pool's round trips).
func (s *Store) Notifies() int64 { return s.notes.sent.Load() }
