package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options tune a Store. The zero value is durable and production-ready.
type Options struct {
	// Synchronous is SQLite's synchronous pragma: FULL (default, durable on power
	// loss), NORMAL (durable on process crash only) or OFF (tests and benchmarks).
	Synchronous string
	// BlobThreshold is the data size above which an event's data is stored once in
	// the blobs table and referenced by hash (default 64 KiB).
	BlobThreshold int
	// MaxBatch caps how many appends one group commit holds (default 512).
	MaxBatch int
	// Readers is the size of the read-only connection pool (default 4).
	Readers int
	// CheckpointPages is the WAL size, in pages, at which the writer copies the WAL
	// back into the database after a commit (default 1000). Negative: the writer never
	// checkpoints on its own, for a replication tool that does (Litestream). Close and
	// an erasure truncate the WAL either way.
	CheckpointPages int
	// Clock stamps events at commit (default time.Now).
	Clock events.Clock
	// OnCommit, when set, hears each group commit: how many events it held and how
	// long it took (its fsync included).
	OnCommit func(events int, took time.Duration)
}

func (o Options) withDefaults() (Options, error) {
	if o.Synchronous == "" {
		o.Synchronous = "FULL"
	}
	switch strings.ToUpper(o.Synchronous) {
	case "FULL", "NORMAL", "OFF", "EXTRA":
		o.Synchronous = strings.ToUpper(o.Synchronous)
	default:
		return o, events.FieldError(events.CodeInvalid, "synchronous", "must be FULL, NORMAL, EXTRA or OFF, got %q", o.Synchronous)
	}
	if o.BlobThreshold <= 0 {
		o.BlobThreshold = 64 << 10
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 512
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.CheckpointPages == 0 {
		o.CheckpointPages = 1000
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o, nil
}

// Store is the SQLite event store and projection reader.
type Store struct {
	path  string // the database file
	opts  Options
	write *sql.DB          // one connection, owned by the writer goroutine
	read  *sql.DB          // read-only pool
	w     *writer          // run by one caller at a time: the one that leads
	watch sqlrows.Watchers // readers following sessions live
	done  chan struct{}    // closed by Close

	// qmu guards the writer's queue. leading says a caller runs the writer now;
	// closing refuses new requests; idle is signalled when the lead is given up.
	qmu              sync.Mutex
	queue            []*appendReq
	leading, closing bool
	idle             *sync.Cond

	closeOnce sync.Once
	closeErr  error

	commits, syncedCommits atomic.Int64
	reads                  readStmts
	router                 atomic.Pointer[projection.WebhookRouter] // which webhooks hear of an event
}

var (
	_ events.Log = (*Store)(nil)
	_ fsm.Store  = (*Store)(nil)
)

// connection roles
const (
	roleWrite = iota
	roleRead
)

func dsn(path string, opts Options, role int) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+opts.Synchronous+")")
	switch role {
	case roleRead:
		q.Add("_pragma", "query_only(1)")
	case roleWrite:
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", max(opts.CheckpointPages, 0)))
		q.Add("_pragma", "secure_delete(1)")   // what is deleted or rewritten is overwritten: erasure leaves no byte behind
		q.Add("_pragma", "cache_size(-65536)") // 64 MiB: a command's changes to thousands of files append without spilling pages mid-transaction
		q.Add("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the database at path, applies pending migrations,
// and starts the writer. A database whose schema is newer than this binary is refused.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	w, err := sql.Open("sqlite", dsn(path, opts, roleWrite))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := migrate(ctx, w, opts.Clock); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", dsn(path, opts, roleRead))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(opts.Readers)
	r.SetMaxIdleConns(opts.Readers)
	s := &Store{path: path, opts: opts, write: w, read: r, done: make(chan struct{})}
	s.idle = sync.NewCond(&s.qmu)
	if s.w, err = newWriter(ctx, s); err != nil {
		s.write.Close()
		s.read.Close()
		return nil, err
	}
	return s, nil
}

// Close commits the appends already queued, writes running turns' counters held in
// memory, checkpoints the WAL and closes the database. Later calls return the first
// call's answer.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Store) close() error {
	close(s.done)
	s.qmu.Lock()
	s.closing = true // nothing new is taken; what is queued is committed by its leader
	for s.leading {
		s.idle.Wait()
	}
	s.leading = true // the last commit is Close's own
	s.qmu.Unlock()
	flush := &appendReq{ctx: context.Background(), done: make(chan struct{}),
		run: func(ctx context.Context, w *writer) error { return w.writeAllProgress(ctx) }}
	s.w.handle([]*appendReq{flush}, nil) // a store that cannot write them now leaves them to HealTurnProgress
	s.w.conn.Close()
	_, _ = s.write.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	s.closeStmts()
	rerr := s.read.Close()
	if err := s.write.Close(); err != nil {
		return err
	}
	return rerr
}

// Closed reports whether Close was called.
func (s *Store) Closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Ping checks that the store answers reads.
func (s *Store) Ping(ctx context.Context) error { return s.read.PingContext(ctx) }

// Ready checks that the store answers reads and that its schema is the one this
// binary knows (another process may have migrated the file further).
func (s *Store) Ready(ctx context.Context) error {
	return sqlrows.CheckSchema(ctx, s.read, qMaxMigration, SchemaVersion())
}
