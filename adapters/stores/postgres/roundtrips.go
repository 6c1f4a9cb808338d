package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// roundTrips counts what the store's pool sends the database and waits for: each
// statement run (Exec, Query, BEGIN and COMMIT included), each statement prepared for
// the statement cache, and each pipeline (an append: its statements go at once) is
// one round trip. The LISTEN connection, which only waits, is not counted.
type roundTrips struct {
	n atomic.Int64
	// recording, while a caller records (Store.RecordRoundTrips), gets each one's SQL.
	mu        sync.Mutex
	recording *[]string
}

var (
	_ pgx.QueryTracer   = (*roundTrips)(nil)
	_ pgx.PrepareTracer = (*roundTrips)(nil)
	_ pgx.BatchTracer   = (*roundTrips)(nil)
)

func (r *roundTrips) count(sql string) {
	r.n.Add(1)
	r.mu.Lock()
	if r.recording != nil {
		*r.recording = append(*r.recording, strings.Join(strings.Fields(sql), " "))
	}
	r.mu.Unlock()
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.count(data.SQL)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

type preparingKey struct{}

func (r *roundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, data pgx.TracePrepareStartData) context.Context {
	return context.WithValue(ctx, preparingKey{}, data.SQL)
}

// TracePrepareEnd counts a prepare that went to the database (one already prepared
// on the connection did not).
func (r *roundTrips) TracePrepareEnd(ctx context.Context, _ *pgx.Conn, data pgx.TracePrepareEndData) {
	if !data.AlreadyPrepared {
		sql, _ := ctx.Value(preparingKey{}).(string)
		r.count("prepare: " + sql)
	}
}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	what := fmt.Sprintf("pipeline of %d statements", data.Batch.Len())
	if q := data.Batch.QueuedQueries; len(q) > 0 {
		what += ": " + q[0].SQL + " …"
	}
	r.count(what)
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// RoundTrips is how many round trips the store's pool has made to the database
// since it opened: each statement it ran and each it prepared.
func (s *Store) RoundTrips() int64 { return s.trips.n.Load() }

// RoundTripRecording holds the SQL of every round trip a store made since it began
// (Store.RecordRoundTrips), in order — what a request costs the database, named.
type RoundTripRecording struct {
	trips *roundTrips
	got   []string
}

// RecordRoundTrips begins recording the store's round trips (one recording at a
// time: a new one ends the one before).
func (s *Store) RecordRoundTrips() *RoundTripRecording {
	r := &RoundTripRecording{trips: s.trips}
	s.trips.mu.Lock()
	s.trips.recording = &r.got
	s.trips.mu.Unlock()
	return r
}

// SQL is what the recording holds so far.
func (r *RoundTripRecording) SQL() []string {
	r.trips.mu.Lock()
	defer r.trips.mu.Unlock()
	return append([]string(nil), r.got...)
}

// Stop ends the recording and returns what it holds.
func (r *RoundTripRecording) Stop() []string {
	r.trips.mu.Lock()
	defer r.trips.mu.Unlock()
	if r.trips.recording == &r.got {
		r.trips.recording = nil
	}
	return r.got
}
