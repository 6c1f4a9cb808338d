package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"

	"github.com/turnlog/turnlog/events"
	sqlite3 "modernc.org/sqlite"
)

type appendReq struct {
	ctx      context.Context
	session  string
	after    int64
	evs      []events.Event
	unsynced bool                                 // the caller does not wait for the disk (AppendUnsynced)
	run      func(context.Context, *writer) error // an exclusive job instead of an append
	outside  bool                                 // run is done between transactions, not in one
	out      []events.Event
	err      error
	done     chan struct{} // closed once the request is decided
	lead     chan struct{} // closed when the request's caller is to run the writer
}

// Append implements events.Log. Many callers' appends share one transaction and
// one fsync; each caller returns once the commit holding its events is durable.
func (s *Store) Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error) {
	if session == "" {
		return nil, events.FieldError(events.CodeInvalid, "session", "is empty")
	}
	if len(evs) == 0 {
		return nil, nil
	}
	for i, ev := range evs {
		if err := sqlrows.CheckEvent(i, ev); err != nil {
			return nil, err
		}
	}
	return s.submit(ctx, &appendReq{ctx: ctx, session: session, after: after, evs: evs, done: make(chan struct{})})
}

// AppendUnsynced is Append without waiting for the disk: the events are committed
// and visible at once, and a crash of the process keeps them (they are in the WAL),
// but they become safe from a power loss only with the store's next synced commit —
// which syncs the whole WAL, these frames included. A batch of only unsynced appends
// commits with synchronous=NORMAL; one synced append in it makes it synced. With
// Synchronous NORMAL or OFF it is Append.
func (s *Store) AppendUnsynced(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error) {
	if session == "" || len(evs) == 0 {
		return s.Append(ctx, session, after, evs)
	}
	for i, ev := range evs {
		if err := sqlrows.CheckEvent(i, ev); err != nil {
			return nil, err
		}
	}
	return s.submit(ctx, &appendReq{ctx: ctx, session: session, after: after, evs: evs, unsynced: true, done: make(chan struct{})})
}

// Commits reports how many group commits the store made and how many of them
// waited for the disk.
func (s *Store) Commits() (all, synced int64) {
	return s.commits.Load(), s.syncedCommits.Load()
}

// exclusive runs fn inside the writer's transaction, between appends.
func (s *Store) exclusive(ctx context.Context, fn func(context.Context, *writer) error) error {
	_, err := s.submit(ctx, &appendReq{ctx: ctx, run: fn, done: make(chan struct{})})
	return err
}

// outsideTx runs fn on the write connection between the writer's transactions (a
// checkpoint cannot run inside one).
func (s *Store) outsideTx(ctx context.Context, fn func(context.Context, *writer) error) error {
	_, err := s.submit(ctx, &appendReq{ctx: ctx, run: fn, outside: true, done: make(chan struct{})})
	return err
}

// submit queues req and returns its answer. The caller that finds no commit under
// way leads: it runs the writer on its own goroutine, committing what is queued,
// its own request first, so an uncontended append needs no hand-off between
// goroutines. Callers that arrive while it commits wait and share the next group
// commit; once the leader's own request is decided it hands the lead to the oldest
// of them, so no caller commits for others for long.
func (s *Store) submit(ctx context.Context, req *appendReq) ([]events.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req.lead = make(chan struct{})
	s.qmu.Lock()
	if s.closing {
		s.qmu.Unlock()
		return nil, events.Errorf(events.CodeInternal, "store is closed")
	}
	s.queue = append(s.queue, req)
	leads := !s.leading
	s.leading = true
	s.qmu.Unlock()
	// Once queued, the request is decided by the writer: wait for its answer even if
	// ctx ends, so a caller never mistakes a committed append for a failed one.
	if !leads {
		select {
		case <-req.done:
			return req.out, req.err
		case <-req.lead:
		}
	}
	s.w.lead(req, !leads)
	<-req.done
	return req.out, req.err
}

// queued reports how many requests wait for the writer.
func (s *Store) queued() int {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return len(s.queue)
}

// lead commits what is queued until mine is decided, and then at most
// leadBatchesAfter more batches while others wait, before it hands the lead to the
// oldest waiting request (or gives it up when none waits). Leading on a little saves
// the next commit the wait for a new leader to wake; handing over bounds how long a
// caller commits for others. contended says callers woken by the last commit may be
// queueing their next appends: they get the processor first, to share this commit.
func (w *writer) lead(mine *appendReq, contended bool) {
	s := w.s
	var batch []*appendReq
	var then *appendReq
	defer func() {
		if p := recover(); p != nil {
			w.abandon(mine, batch, then, p)
			panic(p)
		}
	}()
	for after := 0; ; contended = true {
		if contended {
			for i, n := 0, -1; i < 8 && s.queued() != n; i++ {
				n = s.queued()
				runtime.Gosched()
			}
		}
		s.qmu.Lock()
		batch, then = w.take()
		s.qmu.Unlock()
		w.handle(batch, then)
		if !isDone(mine) {
			continue
		}
		s.qmu.Lock()
		switch {
		case len(s.queue) == 0:
			s.leading = false
			s.idle.Broadcast()
		case after < leadBatchesAfter:
			after++
			s.qmu.Unlock()
			continue
		default:
			close(s.queue[0].lead)
		}
		s.qmu.Unlock()
		return
	}
}

// abandon is what a leader does when a panic (in a job, a projection, the driver)
// unwinds through it: the requests it took that are not decided fail, the open
// transaction is rolled back, and the lead passes on, so the store goes on serving
// (and Close does not wait for ever) while the panic goes on to its caller.
func (w *writer) abandon(mine *appendReq, batch []*appendReq, then *appendReq, p any) {
	err := events.Errorf(events.CodeInternal, "the store's writer failed: %v", p)
	fail := func(r *appendReq) {
		if r != nil && !isDone(r) {
			r.out, r.err = nil, err
			close(r.done)
		}
	}
	for _, r := range append(batch, then) {
		fail(r)
	}
	_, _ = w.rollback.ExecContext(context.Background()) // none may be open: then it fails, harmlessly
	s := w.s
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if i := slices.Index(s.queue, mine); i >= 0 { // the leader's own, not taken yet: nobody else would lead it
		s.queue = slices.Delete(s.queue, i, i+1)
		fail(mine)
	}
	if len(s.queue) == 0 {
		s.leading = false
		s.idle.Broadcast()
		return
	}
	close(s.queue[0].lead)
}

// leadBatchesAfter is how many batches a leader commits for others after its own.
const leadBatchesAfter = 2

func isDone(r *appendReq) bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// take removes the next group commit's requests from the queue (s.qmu held): up to
// MaxBatch appends, ending early at a job that must run between transactions.
func (w *writer) take() (batch []*appendReq, then *appendReq) {
	s := w.s
	n := 0
	for n < len(s.queue) && len(batch) < s.opts.MaxBatch {
		r := s.queue[n]
		n++
		if r.outside {
			then = r
			break
		}
		batch = append(batch, r)
	}
	s.queue = append(s.queue[:0], s.queue[n:]...)
	return batch, then
}

// writer owns the single write connection. Transactions are driven with prepared
// BEGIN/COMMIT statements on it, so no SQL is parsed again per commit.
type writer struct {
	s                                 *Store
	conn                              *sql.Conn
	begin, commitTx, rollback         *sql.Stmt
	lastSeq, insEvent, insBlob        *sql.Stmt
	insChunk, insContent, insRef      *sql.Stmt // the undo log's contents, a row each
	insChunks, insContents, insRefs   *sql.Stmt // and contentBatch rows each
	sessOpen, sessMoved               *sql.Stmt
	turnOpen, turnProgress, turnClose *sql.Stmt
	turnHandoff                       *sql.Stmt
	historyStmts                      map[int]*sql.Stmt // proj_history inserts by row count
	interruptAdd, interruptSet        *sql.Stmt
	interruptEnd, turnPause           *sql.Stmt
	queueAdd, queueEnd                *sql.Stmt
	spendAdd, budgetExtend            *sql.Stmt
	evalResultAdd                     *sql.Stmt
	// syncLazy and syncConfigured switch the connection's synchronous level between
	// NORMAL (a batch of unsynced appends only) and the configured FULL or EXTRA.
	syncLazy, syncConfigured *sql.Stmt
	lazy                     bool // the connection is at NORMAL now
	// seqs caches each session's last committed seq. A miss or a mismatch is checked
	// against the table, and UNIQUE (session_id, seq) backs it against other writers.
	seqs   map[string]int64
	apps   map[string]string // each session's app, for routing webhooks
	txApps map[string]string // ... read in the transaction not yet committed
	// txErased are the sessions the transaction not yet committed erases: once it
	// commits, nothing cached of them may stand.
	txErased []string
	progress progressState // running turns' counters not in proj_turns yet
}

func newWriter(ctx context.Context, s *Store) (*writer, error) {
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{s: s, conn: conn, seqs: map[string]int64{}, apps: map[string]string{}}
	w.progress.committed = map[turnKey]pendingProgress{}
	w.progress.begin()
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{{&w.begin, "BEGIN IMMEDIATE"}, {&w.commitTx, "COMMIT"}, {&w.rollback, "ROLLBACK"},
		{&w.lastSeq, qLastSeq}, {&w.insEvent, qInsertEvent}, {&w.insBlob, qInsertBlob},
		{&w.insChunk, sqlrows.QInsertChunk}, {&w.insContent, sqlrows.QInsertContent}, {&w.insRef, sqlrows.QInsertContentRef},
		{&w.insChunks, sqlrows.Rows(sqlrows.QInsertChunk, contentBatch)}, {&w.insContents, sqlrows.Rows(sqlrows.QInsertContent, contentBatch)},
		{&w.insRefs, sqlrows.Rows(sqlrows.QInsertContentRef, contentBatch)},
		{&w.sessOpen, qSessionOpen}, {&w.sessMoved, qSessionMoved}, {&w.turnOpen, qTurnOpen}, {&w.turnHandoff, qTurnHandoff},
		{&w.turnProgress, qTurnProgress}, {&w.turnClose, qTurnClose},
		{&w.interruptAdd, qInterruptAdd}, {&w.interruptSet, qInterruptSet}, {&w.interruptEnd, qInterruptEnd}, {&w.turnPause, qTurnPause},
		{&w.queueAdd, qQueueAdd}, {&w.queueEnd, qQueueEnd}, {&w.spendAdd, qSpendAdd}, {&w.budgetExtend, qBudgetExtend}, {&w.evalResultAdd, qEvalResultAdd},
		{&w.syncLazy, "PRAGMA synchronous = NORMAL"}, {&w.syncConfigured, "PRAGMA synchronous = " + s.opts.Synchronous}} {
		if *p.dst, err = conn.PrepareContext(ctx, p.q); err != nil {
			conn.Close()
			return nil, fmt.Errorf("prepare %q: %w", p.q, err)
		}
	}
	return w, nil
}

// handle commits batch (if any), then runs the job that must run outside a
// transaction (if any).
func (w *writer) handle(batch []*appendReq, then *appendReq) {
	if len(batch) == 1 && batch[0].outside {
		batch, then = nil, batch[0]
	}
	if len(batch) > 0 {
		w.commit(batch)
	}
	if then != nil {
		if err := then.ctx.Err(); err != nil {
			then.err = err
		} else {
			then.err = then.run(context.Background(), w)
		}
		close(then.done)
	}
}

// commit writes a batch in one transaction (group commit). A request refused before
// it wrote anything (a seq conflict) fails alone; one that fails half-way makes the
// transaction roll back, and the batch is written again without it.
func (w *writer) commit(batch []*appendReq) {
	ctx := context.Background()
	began := time.Now()
	finish := func(err error) {
		for _, r := range batch {
			if err != nil && r.err == nil {
				r.err = err
			}
			if r.err != nil {
				r.out, r.err = nil, storageError(r.err)
			}
			close(r.done)
		}
	}
	synced, err := w.syncLevel(ctx, batch)
	if err != nil {
		finish(err)
		return
	}
	for attempt := 0; ; attempt++ {
		if _, err := w.begin.ExecContext(ctx); err != nil {
			finish(fmt.Errorf("begin append: %w", err))
			return
		}
		at := w.s.opts.Clock().UTC()
		seqs := map[string]int64{}
		w.txApps, w.txErased = map[string]string{}, nil
		w.progress.begin()
		redo := false
		for _, r := range batch {
			if r.err != nil {
				continue
			}
			if err := r.ctx.Err(); err != nil {
				r.err = err
				continue
			}
			var wrote bool
			if r.run != nil {
				r.err, wrote = r.run(ctx, w), true
			} else {
				r.out, wrote, r.err = w.appendOne(ctx, r, at, seqs)
			}
			if r.err != nil && wrote {
				redo = true
				break
			}
		}
		if redo {
			if _, err := w.rollback.ExecContext(ctx); err != nil {
				finish(fmt.Errorf("roll back append: %w", err))
				return
			}
			continue // the failed request keeps its error and is skipped
		}
		if err := w.writeAgedProgress(ctx, at); err != nil {
			w.rollback.ExecContext(ctx)
			finish(err)
			return
		}
		if err := w.commitProgressing(ctx, at); err != nil {
			w.rollback.ExecContext(ctx)
			finish(fmt.Errorf("commit append: %w", err))
			return
		}
		for s, seq := range seqs {
			w.seqs[s] = seq
		}
		for s, app := range w.txApps {
			w.apps[s] = app
		}
		for _, s := range w.txErased {
			delete(w.seqs, s)
			delete(w.apps, s)
		}
		n := 0
		for _, r := range batch {
			if r.err == nil {
				n += len(r.out)
			}
		}
		w.s.commits.Add(1)
		if synced {
			w.s.syncedCommits.Add(1)
		}
		finish(nil)
		w.s.watch.Notify(seqs)
		if w.s.opts.OnCommit != nil && n > 0 {
			w.s.opts.OnCommit(n, time.Since(began))
		}
		break
	}
}

// syncLevel sets the connection's synchronous level for a batch and says whether
// its commit waits for the disk. If the level cannot be set, the batch must fail:
// its callers may be waiting for a durable commit.
func (w *writer) syncLevel(ctx context.Context, batch []*appendReq) (bool, error) {
	if level := w.s.opts.Synchronous; level != "FULL" && level != "EXTRA" {
		return false, nil
	}
	lazy := true
	for _, r := range batch {
		lazy = lazy && r.unsynced
	}
	if lazy != w.lazy {
		stmt := w.syncConfigured
		if lazy {
			stmt = w.syncLazy
		}
		if _, err := stmt.ExecContext(ctx); err != nil {
			return false, fmt.Errorf("set synchronous level: %w", err)
		}
		w.lazy = lazy
	}
	return !lazy, nil
}

// lastSeqOf returns the session's last seq in this transaction: this batch's own
// appends first, then the cache, then the table.
func (w *writer) lastSeqOf(ctx context.Context, session string, after int64, batch map[string]int64) (int64, error) {
	if seq, ok := batch[session]; ok {
		return seq, nil
	}
	if seq, ok := w.seqs[session]; ok && seq == after {
		return seq, nil
	}
	var last int64
	if err := w.lastSeq.QueryRowContext(ctx, session).Scan(&last); err != nil {
		return 0, fmt.Errorf("read last seq of %s: %w", session, err)
	}
	return last, nil
}

// appendOne writes one request's events and their projection changes. wrote says
// whether anything was written before a failure.
func (w *writer) appendOne(ctx context.Context, r *appendReq, at time.Time, batch map[string]int64) ([]events.Event, bool, error) {
	last, err := w.lastSeqOf(ctx, r.session, r.after, batch)
	if err != nil {
		return nil, false, err
	}
	if last != r.after {
		return nil, false, &events.Error{Code: events.CodeConflict, Field: "seq",
			Message: fmt.Sprintf("session %s is at seq %d, not %d: another writer appended first", r.session, last, r.after)}
	}
	if last == 0 && !events.OpensSession(r.evs[0].Type) {
		return nil, false, events.Errorf(events.CodeNotFound, "session %s not found (it was never created, or it was erased)", r.session)
	}
	out := make([]events.Event, len(r.evs))
	for i, ev := range r.evs {
		ev.Session, ev.Seq, ev.At = r.session, r.after+int64(i)+1, at
		if err := w.insert(ctx, ev); err != nil {
			return nil, true, err
		}
		if err := w.insertContents(ctx, ev); err != nil {
			return nil, true, err
		}
		ev.Contents = nil // held by the store now
		if err := w.projectLive(ctx, ev); err != nil {
			return nil, true, fmt.Errorf("project %s/%d: %w", ev.Session, ev.Seq, err)
		}
		if err := w.enqueueWebhooks(ctx, ev); err != nil {
			return nil, true, err
		}
		out[i] = ev
	}
	batch[r.session] = out[len(out)-1].Seq
	return out, true, nil
}

func (w *writer) insert(ctx context.Context, ev events.Event) error {
	data := ev.Data
	var blobHash any
	if len(data) > w.s.opts.BlobThreshold {
		sum := sha256.Sum256(data)
		h := "sha256:" + hex.EncodeToString(sum[:])
		if _, err := w.insBlob.ExecContext(ctx, h, len(data), []byte(data)); err != nil {
			return fmt.Errorf("store blob %s: %w", h, err)
		}
		blobHash = h
		data = events.MustMarshal(sqlrows.BlobRef{Blob: h, Size: len(ev.Data)})
	}
	_, err := w.insEvent.ExecContext(ctx, ev.Session, ev.Seq, ev.Turn, ev.Type, ev.Path, ev.V,
		string(data), blobHash, sqlrows.FormatTime(ev.At))
	if err != nil {
		switch constraintOf(err) {
		case sqliteConstraintUnique, sqliteConstraintPrimaryKey:
			return &events.Error{Code: events.CodeConflict, Field: "seq",
				Message: fmt.Sprintf("event %s/%d already exists: another writer appended first", ev.Session, ev.Seq), Err: err}
		case sqliteConstraintCheck:
			return &events.Error{Code: events.CodeInvalid, Field: "data",
				Message: fmt.Sprintf("event %s/%d holds what the store cannot keep", ev.Session, ev.Seq), Err: err}
		}
		return fmt.Errorf("insert event %s/%d: %w", ev.Session, ev.Seq, err)
	}
	return nil
}

// SQLite's extended result codes of the constraints an insert can fail.
const (
	sqliteConstraintCheck      = 275
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)

// constraintOf is the extended code of a constraint failure, or 0.
func constraintOf(err error) int {
	var se *sqlite3.Error
	if errors.As(err, &se) && se.Code()&0xff == 19 {
		return se.Code()
	}
	return 0
}

// commitProgressing commits the open transaction and folds its counters into
// memory; a commit that writes pending counts holds the lock reads take across
// COMMIT.
func (w *writer) commitProgressing(ctx context.Context, at time.Time) error {
	p := &w.progress
	hold := p.mustHold(w.txErased)
	if hold {
		p.mu.Lock()
		defer p.mu.Unlock()
	}
	if _, err := w.commitTx.ExecContext(ctx); err != nil {
		return err
	}
	if !hold {
		p.mu.Lock()
		defer p.mu.Unlock()
	}
	p.committedTx(at, w.txErased)
	return nil
}

// storageError types a write that failed because the disk is full or failed, so the
// caller can tell that nothing was written and that it may try again later; other
// errors pass as they are.
func storageError(err error) error {
	var se *sqlite3.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqliteFull:
		return &events.Error{Code: events.CodeStorageFull, Message: "the database's disk is full: nothing of this was written; send it again once there is space", Err: err}
	case sqliteIOErr:
		return &events.Error{Code: events.CodeStorageFailed, Message: "the database could not write (an I/O error): nothing of this was written", Err: err}
	}
	return err
}

// SQLite's primary result codes for a full disk and an I/O error.
const (
	sqliteIOErr = 10
	sqliteFull  = 13
)
