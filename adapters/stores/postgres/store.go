package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Options tune a Store. The zero value is durable and production-ready.
type Options struct {
	// BlobThreshold is the data size above which an event's data is stored once in
	// the blobs table and referenced by hash (default 64 KiB).
	BlobThreshold int
	// MaxConns caps the connection pool (default 20).
	MaxConns int
	// Clock stamps events at commit (default time.Now).
	Clock events.Clock
	// OnCommit, when set, hears each commit: how many events it held and how long
	// it took.
	OnCommit func(events int, took time.Duration)
}

// Store is the PostgreSQL event store and projection reader.
type Store struct {
	db    *sql.DB
	opts  Options
	watch sqlrows.Watchers
	done  chan struct{}      // closed by Close
	stop  context.CancelFunc // ends the listener and the notifier
	heard chan struct{}      // closed once the listener has stopped
	notes *notifier          // tells the other nodes of commits
	// appending is held (read) by each append from its closed check to its notify,
	// and taken by Close before the notifier's last batch, so none is left out.
	appending sync.RWMutex
	// listening is closed once the listener first listens: commits after it wake
	// this node's watchers.
	listening chan struct{}
	onCancel  atomic.Pointer[func(session, turn, reason string)] // a cancel another node relays
	scope     string                                             // the schema the store's tables are in: its notifications carry it
	router    atomic.Pointer[projection.WebhookRouter]           // which webhooks hear of an event
	trips     *roundTrips                                        // what the pool sends the database
	apps      sync.Map                                           // session → app, for webhook routing (an app never changes)
	follows   sync.Map                                           // session → *dayFollow: its appends read its owner's day spend
}

var _ events.Log = (*Store)(nil)

// Open connects to the database dsn names (postgres://…), applies pending
// migrations (one node at a time) and returns the store. A database whose schema is
// newer than this binary is refused.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.BlobThreshold <= 0 {
		opts.BlobThreshold = 64 << 10
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 20
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open the database: %w", err)
	}
	trips := &roundTrips{}
	cfg.Tracer = trips
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("reach the database: %w", redact(err))
	}
	if err := migrate(ctx, db, opts.Clock); err != nil {
		db.Close()
		return nil, err
	}
	var scope string
	if err := db.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&scope); err != nil {
		db.Close()
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	lctx, stop := context.WithCancel(context.Background())
	s := &Store{db: db, trips: trips, opts: opts, done: make(chan struct{}), stop: stop, heard: make(chan struct{}), listening: make(chan struct{}), scope: scope, notes: newNotifier()}
	go func() {
		defer close(s.heard)
		s.listen(lctx, dsn)
	}()
	go s.notify(lctx, dsn)
	return s, nil
}

// redact keeps a connection error and drops nothing of it but what could carry the
// DSN: pgx never puts the password in its errors, so it passes as it is.
func redact(err error) error { return err }

// Close closes the pool; appends after it fail.
func (s *Store) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	close(s.done)
	s.appending.Lock() // the appends under way have told the notifier
	s.stop()
	s.appending.Unlock()
	<-s.heard
	<-s.notes.done
	return s.db.Close()
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
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Ready checks that the store answers and that its schema is the one this binary
// knows (another node may have migrated the database further).
func (s *Store) Ready(ctx context.Context) error {
	return sqlrows.CheckSchema(ctx, s.db, qMaxMigration, SchemaVersion())
}

func (s *Store) closedError() error {
	if s.Closed() {
		return events.Errorf(events.CodeInternal, "store is closed")
	}
	return nil
}

var errNoRows = sql.ErrNoRows

func isNoRows(err error) bool { return errors.Is(err, errNoRows) }
