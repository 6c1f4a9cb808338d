package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// An append is one round trip: its statements go to the database as one pgx
// pipeline, which the database runs as one implicit transaction. The first checks the
// append and moves the run's lease (turnlog_append_leased: the lease taken, renewed
// or given up, the seq, that the session exists; the commit unsynced) and raises when
// it fails; then come the events (and blobs), their read-model changes and the
// webhook outbox rows. The other nodes hear of it from the notifier (notify.go). A statement that fails rolls the whole
// append back, and its SQLSTATE says what it was.

// appendStep is one statement of an append's pipeline and what it does, for the error
// of its failure.
type appendStep struct {
	what string
	ev   *events.Event // the event the step writes (nil: the check, the notify)
	// rows, when set, reads the step's rows (a read in the append's transaction).
	rows func(pgx.Rows) error
}

// pipeline is an append's statements to session as they are queued.
type pipeline struct {
	session string
	after   int64
	b       pgx.Batch
	steps   []appendStep
	token   int64 // the lease's token the first step (the check) returned
}

func (p *pipeline) queue(what string, ev *events.Event, query string, args ...any) {
	p.b.Queue(query, args...)
	p.steps = append(p.steps, appendStep{what: what, ev: ev})
}

// changesInto queues read-model changes (applyChanges writes to an execer).
type changesInto struct {
	p  *pipeline
	ev *events.Event
}

func (c changesInto) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	c.p.queue(fmt.Sprintf("project %s/%d", c.ev.Session, c.ev.Seq), c.ev, query, args...)
	return nil, nil
}

// appendPipelined appends evs to lease.Session after seq after in one round trip (see
// above), unsynced as AppendUnsynced. Its transaction is decided whole even if ctx
// ends: a caller never mistakes a committed append for a failed one.
func (s *Store) appendPipelined(ctx context.Context, lease fsm.Lease, after int64, evs []events.Event, unsynced bool) ([]events.Event, int64, error) {
	ctx = context.WithoutCancel(ctx)
	session := lease.Session
	app, learned, err := s.webhookApp(ctx, session, evs)
	if err != nil {
		return nil, 0, err
	}
	p := &pipeline{session: session, after: after}
	p.queue("check the append", nil, `SELECT turnlog_append_leased($1, $2, $3, $4, $5, $6, $7, $8)`,
		session, after, lease.Token, lease.Node, lease.TTL.Microseconds(), lease.Release, events.OpensSession(evs[0].Type), unsynced)
	at := s.opts.Clock().UTC()
	out := make([]events.Event, len(evs))
	for i, ev := range evs {
		ev.Session, ev.Seq, ev.At = session, after+int64(i)+1, at
		out[i] = ev
		ev := &out[i]
		s.queueInsert(p, ev)
		queueContents(p, ev)
		changes, err := projection.Changes(*ev)
		if err == nil {
			err = applyChanges(ctx, changesInto{p, ev}, changes)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("project %s/%d: %w", ev.Session, ev.Seq, err)
		}
		s.queueWebhooks(p, ev, app)
	}
	publish := s.queueDaySpend(p)
	if err := s.run(ctx, p); err != nil {
		return nil, 0, err
	}
	publish()
	if learned {
		s.apps.Store(session, app) // known once the session is in the log
	}
	for i := range out {
		out[i].Contents = nil // held by the store now
	}
	return out, p.token, nil
}

// queueInsert queues ev's row, and its blob when its data is over the threshold.
func (s *Store) queueInsert(p *pipeline, ev *events.Event) {
	data := ev.Data
	var blobHash any
	if len(data) > s.opts.BlobThreshold {
		sum := sha256.Sum256(data)
		h := "sha256:" + hex.EncodeToString(sum[:])
		p.queue("store blob "+h, ev, `INSERT INTO blobs (hash, size, data) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING`, h, len(data), []byte(data))
		blobHash = h
		data = events.MustMarshal(sqlrows.BlobRef{Blob: h, Size: len(ev.Data)})
	}
	p.queue(fmt.Sprintf("insert event %s/%d", ev.Session, ev.Seq), ev,
		`INSERT INTO events (session_id, seq, turn_id, type, path, v, data, blob_hash, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		ev.Session, ev.Seq, ev.Turn, ev.Type, ev.Path, ev.V, string(data), blobHash, sqlrows.FormatTime(ev.At))
}

// queueContents queues the contents ev carries and the session's references to
// them (sqlrows/contents.go), three statements for all of them, each in the order of
// its hashes: two appends that insert the same hashes wait for each other's rows in
// one order, never in a cycle.
func queueContents(p *pipeline, ev *events.Event) {
	if len(ev.Contents) == 0 {
		return
	}
	// A content of one chunk has the chunk's hash: each kind is kept apart.
	chunkData := map[string][]byte{}
	type content struct {
		size int64
		list string
	}
	contents := map[string]content{}
	refSet := map[string]bool{}
	for _, c := range ev.Contents {
		for _, ch := range c.Chunks {
			chunkData[ch.Hash] = ch.Data
			refSet[ch.Hash] = true
		}
		contents[c.Hash] = content{c.Size, sqlrows.ChunkList(c)}
		refSet[c.Hash] = true
	}
	chunks := slices.Sorted(maps.Keys(chunkData))
	data := make([][]byte, len(chunks))
	for i, h := range chunks {
		data[i] = chunkData[h]
	}
	hashes := slices.Sorted(maps.Keys(contents))
	sizes, lists := make([]int64, len(hashes)), make([]string, len(hashes))
	for i, h := range hashes {
		sizes[i], lists[i] = contents[h].size, contents[h].list
	}
	refs := slices.Sorted(maps.Keys(refSet))
	what := fmt.Sprintf("store the contents of %s/%d", ev.Session, ev.Seq)
	// The references first: an erasure (which locks content_refs against them) then
	// either waits for this append and sees them, or ran first, and the contents it
	// removed are written again below.
	p.queue(what, ev, `INSERT INTO content_refs (session_id, hash) SELECT $1, h FROM unnest($2::text[]) AS h ON CONFLICT (session_id, hash) DO NOTHING`, ev.Session, refs)
	p.queue(what, ev, `INSERT INTO content_chunks (hash, data) SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT (hash) DO NOTHING`, chunks, data)
	p.queue(what, ev, `INSERT INTO contents (hash, size, chunks) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) ON CONFLICT (hash) DO NOTHING`, hashes, sizes, lists)
}

// queueWebhooks queues an outbox row for each webhook the router names for ev.
func (s *Store) queueWebhooks(p *pipeline, ev *events.Event, app string) {
	r := s.router.Load()
	kind := projection.WebhookEventOf(ev.Type)
	if r == nil || kind == "" {
		return
	}
	for _, hook := range (*r)(app, kind) {
		p.queue("write the webhook outbox", ev, `INSERT INTO webhook_outbox (delivery_id, app, webhook, event, session_id, seq, turn_id, status, next_at_ms, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9) ON CONFLICT (delivery_id) DO NOTHING`,
			projection.DeliveryID(app, hook, ev.Session, ev.Seq), app, hook, kind, ev.Session, ev.Seq, ev.Turn, ev.At.UnixMilli(), sqlrows.KeyTime(ev.At))
	}
}

// webhookApp is the app of session when an event of evs may go to a webhook ("" when
// none may): from the event of evs that opens the session, from what this store has
// seen of it, or read once; learned says the caller keeps it once the append commits.
// (An erasure forgets what was kept of its sessions.)
func (s *Store) webhookApp(ctx context.Context, session string, evs []events.Event) (app string, learned bool, err error) {
	if s.router.Load() == nil || !slicesContainsWebhookEvent(evs) {
		return "", false, nil
	}
	for _, ev := range evs {
		changes, err := projection.Changes(ev)
		if err != nil {
			continue
		}
		for _, c := range changes {
			if open, ok := c.(projection.SessionOpened); ok && open.Session.App != "" {
				return open.Session.App, true, nil
			}
		}
	}
	if app, ok := s.apps.Load(session); ok {
		return app.(string), false, nil
	}
	if err := s.db.QueryRowContext(ctx, `SELECT app FROM proj_sessions WHERE id = $1`, session).Scan(&app); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return "", false, nil // the check refuses the append
		}
		return "", false, storageError(fmt.Errorf("read the app of %s: %w", session, err))
	}
	return app, true, nil
}

func slicesContainsWebhookEvent(evs []events.Event) bool {
	for _, ev := range evs {
		if projection.WebhookEventOf(ev.Type) != "" {
			return true
		}
	}
	return false
}

// run sends p's statements as one pipeline on a connection of the pool and reads
// each one's outcome; the first that failed says why nothing was written. (A
// connection lost after the pipeline was sent leaves its outcome unknown, as a lost
// COMMIT would: that error is untyped.)
func (s *Store) run(ctx context.Context, p *pipeline) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return storageError(fmt.Errorf("take a connection: %w", err))
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		pc := driverConn.(*stdlib.Conn).Conn()
		// Each statement is prepared on the connection once, by name (its text), and
		// the pipeline binds the prepared ones: a warm connection sends the append in
		// one round trip, a cold one prepares each statement it has not seen first —
		// counted, and never undone by a failed append.
		for _, q := range p.b.QueuedQueries {
			if _, err := pc.Prepare(ctx, q.SQL, q.SQL); err != nil {
				return storageError(fmt.Errorf("prepare %.60s: %w", q.SQL, err))
			}
		}
		br := pc.SendBatch(ctx, &p.b)
		for i := range p.steps {
			var err error
			switch {
			case i == 0:
				err = br.QueryRow().Scan(&p.token)
			case p.steps[i].rows != nil:
				err = readRows(br, p.steps[i].rows)
			default:
				_, err = br.Exec()
			}
			if err != nil {
				br.Close()
				return appendError(p, p.steps[i], err)
			}
		}
		if err := br.Close(); err != nil {
			return storageError(fmt.Errorf("commit: %w", err))
		}
		return nil
	})
}

// appendError is the typed error of an append whose step failed.
func appendError(p *pipeline, step appendStep, err error) error {
	switch state := sqlState(err); {
	case state == "TL001":
		return &events.Error{Code: events.CodeConflict, Message: fmt.Sprintf("this node lost the lease of session %s: another node runs it now", p.session), Err: err}
	case state == "TL002":
		msg := fmt.Sprintf("session %s is not at seq %d: another writer appended first", p.session, p.after)
		if last, perr := strconv.ParseInt(pgDetail(err), 10, 64); perr == nil {
			msg = fmt.Sprintf("session %s is at seq %d, not %d: another writer appended first", p.session, last, p.after)
		}
		return &events.Error{Code: events.CodeConflict, Field: "seq", Message: msg, Err: err}
	case state == "TL003":
		return events.Errorf(events.CodeNotFound, "session %s not found (it was never created, or it was erased)", p.session)
	case state == "TL004":
		return &events.Error{Code: events.CodeConflict, Message: fmt.Sprintf("session %s is busy on another node", p.session), Err: err}
	case state == "23505" && constraintName(err) == "events_session_id_seq_key" && step.ev != nil:
		return &events.Error{Code: events.CodeConflict, Field: "seq", Message: fmt.Sprintf("event %s/%d already exists: another writer appended first", step.ev.Session, step.ev.Seq), Err: err}
	case (state == "23514" || strings.HasPrefix(state, "22")) && step.ev != nil:
		// A check, or data the json type or a view's function cannot take.
		return &events.Error{Code: events.CodeInvalid, Field: "data", Message: fmt.Sprintf("event %s/%d holds what the store cannot keep", step.ev.Session, step.ev.Seq), Err: err}
	}
	return storageError(fmt.Errorf("%s: %w", step.what, err))
}

// pgDetail is the DETAIL of a PostgreSQL error, or "".
func pgDetail(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Detail
	}
	return ""
}
