package fsm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Options are an Engine's injectable sources.
type Options struct {
	Clock events.Clock
	NewID events.IDFunc
	// CacheSessions bounds how many sessions' conversations stay in memory between
	// turns (default 1024), so a turn never refolds a long history; past it the
	// least recently used is evicted (and read again when its session next runs).
	CacheSessions int
	// Observer hears model calls, tool calls and turn ends (default: nobody).
	Observer Observer
	// Tracer hears the spans of live work (nil: none).
	Tracer Tracer
	// NodeID names this node in the sessions' leases of a store several nodes share
	// (default: the host name and a random suffix); LeaseTTL is how long a lease lasts
	// unrenewed (default DefaultLeaseTTL).
	NodeID   string
	LeaseTTL time.Duration
	// Cluster, for a store several nodes share, gives the engine the sessions' leases
	// and the cancel relay (nil: one node, the store's alone).
	Cluster Cluster
	// Requests, when set, sees every model request an agent's call is built from, live
	// or replayed (for debugging and tests; the model's own streaming hook is unset).
	Requests func(path string, req ModelRequest)
	// CancelGrace is how long a canceled turn waits for a tool that ignores its
	// context before it records the call as abandoned and ends (default 5s).
	CancelGrace time.Duration
	// ReplayOnly makes an engine that acts on nothing, for replays that must not: a
	// model call or a tool call its recording lacks is never made — the model call
	// fails the turn with nondeterminism, the tool call gets a replay_only error —, so
	// the replay diverges there instead of acting.
	ReplayOnly bool
}

// DefaultCancelGrace is the default of Options.CancelGrace.
const DefaultCancelGrace = 5 * time.Second

// DefaultCancelReason is what TurnCanceled says when the caller gives no reason.
const DefaultCancelReason = "canceled by request"

// Engine runs turns of configured apps against a Store.
type Engine struct {
	store Store
	apps  map[string]*App
	opts  Options

	deltas deltaHub

	mu       sync.Mutex
	running  map[string]*runHandle // sessions with a turn in this process
	cache    *conversationCache
	draining bool // Drain was called: no new work
}

// runHandle lets a person cancel the turn running on a session.
type runHandle struct {
	session  string
	lease    int64              // the session's lease token on a shared store (0: none)
	turn     string             // set once TurnStarted is durable (under Engine.mu)
	from     int64              // the seq this run began at: its TurnStarted, a resume's TurnResumed (0: the turn's start is older)
	stopped  context.Context    // done when the turn is to stop now: tools' contexts end
	stopNow  context.CancelFunc // ... ends stopped
	soft     chan struct{}      // closed to stop at the next safe point (new input interrupts)
	once     sync.Once
	softOnce sync.Once
	finished chan struct{}

	mu     sync.Mutex
	reason string // why it was stopped (the first reason given)

	quiet bool // its unlock does not kick the session's queue (set before it)
}

func (h *runHandle) setReason(reason string) {
	h.mu.Lock()
	if h.reason == "" {
		h.reason = reason
	}
	h.mu.Unlock()
}

func (h *runHandle) why() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason
}

func (h *runHandle) stop(reason string) {
	h.once.Do(func() {
		h.setReason(reason)
		h.stopNow()
	})
}

// stopSoftly asks the turn to stop at its next safe point, letting a running tool
// finish.
func (h *runHandle) stopSoftly(reason string) {
	h.softOnce.Do(func() {
		h.setReason(reason)
		close(h.soft)
	})
}

// LeaseTTL is how long this engine's session leases last unrenewed.
func (e *Engine) LeaseTTL() time.Duration { return e.opts.LeaseTTL }

// New builds an engine. Every app is validated.
func New(store Store, apps []*App, opts Options) (*Engine, error) {
	if opts.Clock == nil || opts.NewID == nil {
		return nil, fmt.Errorf("engine: Clock and NewID are required")
	}
	if opts.CancelGrace <= 0 {
		opts.CancelGrace = DefaultCancelGrace
	}
	if opts.CacheSessions <= 0 {
		opts.CacheSessions = 1024
	}
	if opts.Observer == nil {
		opts.Observer = noObserver{}
	}
	if opts.Tracer == nil {
		opts.Tracer = noTracer{}
	}
	if opts.NodeID == "" {
		opts.NodeID = newNodeID()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	e := &Engine{store: store, apps: map[string]*App{}, opts: opts,
		running: map[string]*runHandle{}, cache: newConversationCache(opts.CacheSessions)}
	for _, a := range apps {
		if err := a.Validate(); err != nil {
			return nil, err
		}
		if _, dup := e.apps[a.Name]; dup {
			return nil, fmt.Errorf("app %s is defined twice", a.Name)
		}
		e.apps[a.Name] = a
	}
	if opts.Cluster != nil {
		opts.Cluster.OnCancel(e.cancelHere)
	}
	return e, nil
}

// Apps returns the configured apps, by name.
func (e *Engine) Apps() []*App {
	out := make([]*App, 0, len(e.apps))
	for _, a := range e.apps {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *App) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// App returns a configured app by name.
func (e *Engine) App(name string) (*App, bool) {
	a, ok := e.apps[name]
	return a, ok
}

// CreateSession opens a session of app for owner. Errors: invalid (unknown app,
// metadata that is not a JSON object), internal.
func (e *Engine) CreateSession(ctx context.Context, app, owner string, metadata json.RawMessage) (projection.Session, error) {
	a, ok := e.apps[app]
	if !ok {
		return projection.Session{}, events.FieldError(events.CodeInvalid, "app", "unknown app %q", app)
	}
	if len(metadata) > 0 {
		var err error
		if metadata, err = canonicalMetadata(metadata); err != nil {
			return projection.Session{}, err
		}
	}
	id := e.opts.NewID()
	ev, err := events.New("", "", &events.SessionCreated{App: app, Owner: owner, Agent: a.StartAgent, Metadata: metadata})
	if err != nil {
		return projection.Session{}, err
	}
	if _, err := e.store.Append(ctx, id, 0, []events.Event{ev}); err != nil {
		return projection.Session{}, fmt.Errorf("create session: %w", err)
	}
	return e.store.Session(ctx, id)
}

// canonicalMetadata checks that metadata is a JSON object and canonicalizes it.
func canonicalMetadata(metadata json.RawMessage) (json.RawMessage, error) {
	if err := storableJSON("metadata", metadata); err != nil {
		return nil, err
	}
	canon, err := events.Canonicalize(metadata)
	if err != nil {
		if ce, ok := err.(*events.CanonicalError); ok {
			ce.Path = "metadata" + strings.TrimPrefix(ce.Path, "$")
			return nil, ce.AsError()
		}
		return nil, err
	}
	if canon[0] != '{' {
		return nil, events.FieldError(events.CodeInvalid, "metadata", "must be a JSON object")
	}
	return canon, nil
}

// Settled returns once the session is no longer held by the run of turn that wrote
// its end at seq `end` (or ctx ends). A turn's end is durable a moment before its run
// lets the session go: whoever saw the end and answers a client waits for this
// first, so the client's next turn is not refused as busy. A later run of the same
// turn (a resume after a suspension) is not waited for.
func (e *Engine) Settled(ctx context.Context, session, turn string, end int64) error {
	e.mu.Lock()
	h := e.running[session]
	held := h != nil && h.turn == turn && h.from <= end
	e.mu.Unlock()
	if !held {
		return nil
	}
	select {
	case <-h.finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lock marks a session busy in this process and, on a store several nodes share,
// takes the session's lease (renewed until unlock). Errors: conflict (a turn runs
// here, or another node holds the session), shutting_down.
func (e *Engine) lock(session string) (*runHandle, func(), error) {
	e.mu.Lock()
	if e.draining {
		e.mu.Unlock()
		return nil, nil, events.Errorf(events.CodeShuttingDown, "turnlog is shutting down: send it again once it is back")
	}
	if e.running[session] != nil {
		e.mu.Unlock()
		return nil, nil, events.Errorf(events.CodeConflict, "session %s already has a turn running", session)
	}
	h := &runHandle{session: session, soft: make(chan struct{}), finished: make(chan struct{})}
	h.stopped, h.stopNow = context.WithCancel(context.Background())
	e.running[session] = h
	e.mu.Unlock()
	free := func() {
		e.mu.Lock()
		delete(e.running, session)
		e.mu.Unlock()
		close(h.finished)
	}
	leaser := e.opts.Cluster
	if leaser == nil {
		return h, func() {
			free()
			if !h.quiet {
				go e.kick(session) // the session is free: its next queued input may run
			}
		}, nil
	}
	ctx := context.Background()
	token, err := leaser.AcquireLease(ctx, session, e.opts.NodeID, e.opts.LeaseTTL)
	if err != nil {
		free()
		return nil, nil, err
	}
	h.lease = token
	stopRenewing := e.renewLease(leaser, h)
	return h, func() {
		stopRenewing()
		leaser.ReleaseLease(ctx, session, token)
		free()
		if !h.quiet {
			go e.kick(session)
		}
	}, nil
}

// renewLease renews h's lease a few times within each TTL until stopped; a lease it
// finds lost stops the turn (its appends are refused anyway).
func (e *Engine) renewLease(l Leaser, h *runHandle) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(e.opts.LeaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if err := l.RenewLease(context.Background(), h.session, h.lease, e.opts.LeaseTTL); events.IsCode(err, events.CodeConflict) {
					h.stop("this node lost the session's lease: another node runs it now")
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// bound is ctx with h's lease, so that the store fences the appends made with it.
func (h *runHandle) bound(ctx context.Context) context.Context {
	if h.lease == 0 {
		return ctx
	}
	return WithLease(ctx, h.session, h.lease)
}

func (e *Engine) setRunningTurn(h *runHandle, turn string, from int64) {
	e.mu.Lock()
	h.turn, h.from = turn, from
	e.mu.Unlock()
}

// conversation returns the committed conversation of a session, from memory when the
// cache is current, else from the history projection (once per turn at most).
func (e *Engine) conversation(ctx context.Context, s projection.Session) (*conversation, error) {
	e.mu.Lock()
	c, ok := e.cache.get(s.ID)
	e.mu.Unlock()
	if ok && c.lastCommitSeq == s.LastCommitSeq {
		return c.conv, nil
	}
	items, err := e.store.History(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	conv := &conversation{}
	conv.append(items...)
	e.remember(s.ID, s.LastCommitSeq, conv) // a resume of this very turn finds it too
	return conv, nil
}

func (e *Engine) remember(session string, commitSeq int64, conv *conversation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cache.put(session, &sessionCache{lastCommitSeq: commitSeq, conv: conv})
}

func (e *Engine) forget(session string) {
	e.mu.Lock()
	e.cache.remove(session)
	e.mu.Unlock()
}

// RunTurn runs one turn of a session with the user's input and returns its outcome.
// The turn runs to its end even if ctx is cancelled (the log must not hold a
// half-turn because a client went away). Errors: invalid (empty input), not_found
// (session), conflict (a turn is already running), internal (store failure).
func (e *Engine) RunTurn(ctx context.Context, session, input string) (*Result, error) {
	started, err := e.StartTurn(ctx, session, input)
	if err != nil {
		return nil, err
	}
	return started.Wait()
}

// StartedTurn is a turn whose TurnStarted is durable and that runs in the background.
type StartedTurn struct {
	ID       string
	StartSeq int64
	done     chan struct{}
	res      *Result
	err      error
}

// Wait returns the turn's outcome once it has ended.
func (t *StartedTurn) Wait() (*Result, error) {
	<-t.done
	return t.res, t.err
}

// StartTurn checks the request, appends TurnStarted, and drives the turn in the
// background; the caller may follow it in the log from StartSeq. It returns the same
// errors as RunTurn, before anything is written.
func (e *Engine) StartTurn(ctx context.Context, session, input string) (*StartedTurn, error) {
	if strings.TrimSpace(input) == "" {
		return nil, events.FieldError(events.CodeInvalid, "input", "is empty")
	}
	if err := storableText("input", input); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	h, unlock, err := e.lock(session)
	if err != nil {
		return nil, err
	}
	ctx = h.bound(ctx)
	r, err := e.prepareTurn(ctx, session, input, h)
	if err != nil {
		unlock()
		return nil, err
	}
	t := &StartedTurn{ID: r.turn, StartSeq: r.log.last(), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer unlock()
		t.res, t.err = r.begin(r.input)
		r.broke(t.err)
	}()
	return t, nil
}

// Compact runs a compaction turn on a session: its active agent's context manager
// summarises every committed item not summarised yet, and the summary is committed
// (it stands for those items in every later request; the history keeps them). It
// returns once the turn has ended. Errors: not_found (session), invalid (the agent
// has no context window), conflict (a turn is running or suspended, or there is
// nothing new to summarise).
func (e *Engine) Compact(ctx context.Context, session string) (*Result, error) {
	ctx = context.WithoutCancel(ctx)
	h, unlock, err := e.lock(session)
	if err != nil {
		return nil, err
	}
	ctx = h.bound(ctx)
	defer unlock()
	r, err := e.prepareTurn(ctx, session, "", h)
	if err != nil {
		return nil, err
	}
	return r.begin("")
}

// prepareTurn appends TurnStarted for a locked session and returns the run to drive.
func (e *Engine) prepareTurn(ctx context.Context, session, input string, h *runHandle) (*run, error) {
	return e.prepareTurnAs(ctx, session, input, h, "")
}

// prepareQueued is prepareTurn for a queued input, as the turn it was promised.
func (e *Engine) prepareQueued(ctx context.Context, session string, q projection.QueuedInput, h *runHandle) (*run, error) {
	return e.prepareTurnAs(ctx, session, q.Input, h, q.Turn)
}

// prepareTurnAs is prepareTurn with the turn's id given ("": a new one).
func (e *Engine) prepareTurnAs(ctx context.Context, session, input string, h *runHandle, turn string) (*run, error) {
	s, err := e.store.Session(ctx, session)
	if err != nil {
		return nil, err
	}
	app, ok := e.apps[s.App]
	if !ok {
		return nil, events.Errorf(events.CodeInvalid, "session %s belongs to app %q, which is not configured", session, s.App)
	}
	agent, ok := app.Agents[s.ActiveAgent]
	if !ok {
		return nil, events.Errorf(events.CodeInvalid, "session %s is with agent %q, which app %s no longer has", session, s.ActiveAgent, app.Name)
	}
	last, err := e.store.LastSeq(ctx, session)
	if err != nil {
		return nil, err
	}
	if last != s.LastCommitSeq {
		if lt, err := e.store.LastTurn(ctx, session); err == nil && lt.Status == projection.TurnSuspended {
			return nil, events.Errorf(events.CodeConflict, "turn %s of session %s is suspended: answer its interrupts with resume_map", lt.ID, session)
		}
		if inflight, err := e.inFlight(ctx, session); err != nil || inflight != "" {
			if err != nil {
				return nil, err
			}
			return nil, events.Errorf(events.CodeConflict, "session %s has turn %s in flight: it ends once the store takes writes again, or at the next start", session, inflight)
		}
	}
	conv, err := e.conversation(ctx, s)
	if err != nil {
		return nil, err
	}
	kind := ""
	if input == "" {
		if err := compactable(agent, conv); err != nil {
			return nil, err
		}
		kind = events.KindCompaction
	}
	if turn == "" {
		turn = e.opts.NewID()
	}
	// The log, the model and every client see the input only after redaction.
	input, policy := app.Policy.transformText(TargetModelInput, input, nil)
	start, err := events.New(turn, "", &events.TurnStarted{Input: input, Agent: agent.Name, Kind: kind, Policy: policy, RequestKey: requestKeyOf(ctx)})
	if err != nil {
		return nil, err
	}
	out, err := e.appendPastQueue(ctx, session, last, []events.Event{start}, true)
	if err != nil {
		return nil, fmt.Errorf("start turn: %w", err)
	}
	e.setRunningTurn(h, turn, out[0].Seq)
	r := e.newRun(ctx, app, agent, session, s.Owner, turn, out[0].Seq, conv, nil, nil)
	r.stopped, r.stopper = h.stopped, h
	r.input = input // as recorded: after redaction
	r.traceRun(false)
	return r, nil
}

func (e *Engine) inFlight(ctx context.Context, session string) (string, error) {
	running, err := e.store.RunningTurns(ctx)
	if err != nil {
		return "", err
	}
	for _, t := range running {
		if t.Session == session {
			return t.ID, nil
		}
	}
	return "", nil
}

// Recover re-drives every turn that started and did not end (after a crash): recorded
// activities are reused, only what is missing runs. It returns one result per turn it
// recovered, and the errors of those it could not, joined: one turn that fails does
// not keep the others from being recovered. On a store several nodes share, it takes
// only the turns whose lease expired (their node is gone): a live node's are left.
func (e *Engine) Recover(ctx context.Context) ([]*Result, error) {
	ctx = context.WithoutCancel(ctx)
	running, err := e.store.RunningTurns(ctx)
	if err != nil {
		return nil, err
	}
	var results []*Result
	var errs []error
	shared := e.opts.Cluster != nil
	for _, t := range running {
		res, err := e.recoverTurn(ctx, t)
		if errors.Is(err, errTurnEnded) || (shared && events.IsCode(err, events.CodeConflict)) {
			continue // a live node runs it (this one, or another whose lease holds), or it ended meanwhile
		}
		if err != nil { // the others are recovered all the same
			errs = append(errs, fmt.Errorf("recover turn %s of %s: %w", t.ID, t.Session, err))
			continue
		}
		results = append(results, res)
	}
	errs = append(errs, e.kickAll(ctx)) // queued inputs of sessions now free start
	return results, errors.Join(errs...)
}

// progressHealer is a store that keeps a running turn's counters (model and tool
// calls, tokens) in memory between writes: before a turn whose process went away is
// recovered, the store counts them again from the log.

// errTurnEnded is a turn to recover that ended before its recovery could begin.
var errTurnEnded = errors.New("the turn ended before its recovery began")

func (e *Engine) recoverTurn(ctx context.Context, t projection.Turn) (*Result, error) {
	h, unlock, err := e.lock(t.Session)
	if err != nil {
		return nil, err
	}
	ctx = h.bound(ctx)
	defer unlock()
	// The list of running turns was read before the lock: the node that ran this one
	// may have ended it and given its lease up since.
	if now, err := e.store.Turn(ctx, t.Session, t.ID); err != nil {
		return nil, err
	} else if now.Status != projection.TurnRunning {
		return nil, errTurnEnded
	}
	e.setRunningTurn(h, t.ID, 0)
	e.forget(t.Session)
	if err := e.store.HealTurnProgress(ctx, t.Session, t.ID); err != nil {
		return nil, err
	}
	s, err := e.store.Session(ctx, t.Session)
	if err != nil {
		return nil, err
	}
	evs, err := e.store.Events(ctx, t.Session, t.StartSeq-1)
	if err != nil {
		return nil, err
	}
	conv, err := e.conversation(ctx, s)
	if err != nil {
		return nil, err
	}
	seq := evs[len(evs)-1].Seq
	app, ok := e.apps[s.App]
	var agent *Agent
	if ok {
		agent = app.Agents[t.Agent]
	}
	rec := newRecording(evs)
	r := e.newRun(ctx, app, agent, t.Session, s.Owner, t.ID, seq, conv, rec, rec)
	r.stopped, r.stopper = h.stopped, h
	if agent == nil {
		r.conv.append(events.UserMessage(t.Input))
		return r.fail(events.CodeInvalid, fmt.Sprintf("app %q or agent %q is no longer configured", s.App, t.Agent), "")
	}
	r.traceRun(true)
	return r.begin(t.Input)
}

// Cancel stops a running or suspended turn of session: the context of every tool
// running in it ends (bash and command tools lose their PID namespace, HTTP and MCP
// requests are cut, Go functions see ctx.Done()), each stopped call is recorded as
// canceled — or, for one that ignores its context past Options.CancelGrace, as
// abandoned —, then TurnCanceled with reason; Cancel returns once it is recorded. A suspended turn, or one a crash left running, is canceled
// directly. Errors: not_found,
// conflict (the turn has already ended).
func (e *Engine) Cancel(ctx context.Context, session, turn, reason string) (projection.Turn, error) {
	if reason == "" {
		reason = DefaultCancelReason
	}
	if err := storableText("reason", reason); err != nil {
		return projection.Turn{}, err
	}
	e.mu.Lock()
	h := e.running[session]
	running := h != nil && h.turn == turn // read under the lock setRunningTurn writes under
	e.mu.Unlock()
	if running {
		h.stop(reason)
		select {
		case <-h.finished:
		case <-ctx.Done():
			return projection.Turn{}, ctx.Err()
		}
		return e.store.Turn(ctx, session, turn)
	}
	t, err := e.store.Turn(ctx, session, turn)
	if events.IsCode(err, events.CodeNotFound) {
		if q, derr := e.dropQueued(ctx, session, turn, reason); q != nil || derr != nil {
			if derr != nil {
				return projection.Turn{}, derr
			}
			// It never started: the turn as it stood, queued, now canceled.
			now := e.opts.Clock().UTC()
			return projection.Turn{Session: session, ID: turn, Status: projection.TurnCanceled, Input: q.Input, Agents: []string{},
				StartedAt: q.QueuedAt, EndedAt: &now, ErrorCode: events.CodeCanceled, ErrorMessage: reason}, nil
		}
	}
	if err != nil {
		return t, err
	}
	if t.Status != projection.TurnRunning && t.Status != projection.TurnSuspended {
		return t, events.Errorf(events.CodeConflict, "turn %s is %s: there is nothing to cancel", turn, t.Status)
	}
	h, unlock, err := e.lock(session)
	if relay := e.opts.Cluster; relay != nil && events.IsCode(err, events.CodeConflict) && t.Status == projection.TurnRunning {
		return e.cancelElsewhere(ctx, relay, session, turn, reason)
	}
	if err != nil {
		return t, err
	}
	ctx = h.bound(ctx)
	defer unlock()
	if ph := e.store; t.Status == projection.TurnRunning { // counted again: the run that held them is gone
		// No process runs it: the one that did went away, with its counts in memory.
		if err := ph.HealTurnProgress(ctx, session, turn); err != nil {
			return t, err
		}
		if t, err = e.store.Turn(ctx, session, turn); err != nil {
			return t, err
		}
	}
	last, err := e.store.LastSeq(ctx, session)
	if err != nil {
		return t, err
	}
	ev, err := events.New(turn, "", &events.TurnCanceled{Reason: reason, Usage: t.Usage})
	if err != nil {
		return t, err
	}
	if _, err := e.appendPastQueue(ctx, session, last, []events.Event{ev}, false); err != nil {
		return t, err
	}
	ended, err := e.store.Turn(ctx, session, turn)
	if err == nil {
		app := ""
		if s, serr := e.store.Session(ctx, session); serr == nil {
			app = s.App
		}
		e.opts.Observer.TurnEnded(TurnEnd{App: app, Session: session, Turn: turn, Status: StatusCanceled, Code: events.CodeCanceled, RequestID: RequestIDOf(ctx),
			Message: reason, Took: e.opts.Clock().Sub(t.StartedAt)})
	}
	return ended, err
}

// CachedSessions is how many sessions' conversations the engine keeps in memory
// now: at most Options.CacheSessions, the most recently used.
func (e *Engine) CachedSessions() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cache.len()
}
