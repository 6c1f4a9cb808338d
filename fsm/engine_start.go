package fsm

// Starting a turn: checks, TurnStarted, and the run in the background.

import (
	"context"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

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
	h, unlock, err := e.lockToAppend(session)
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
	h, unlock, err := e.lockToAppend(session)
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

// prepareTurnAs is prepareTurn with the turn's id given ("": a new one; else a queued
// input's).
func (e *Engine) prepareTurnAs(ctx context.Context, session, input string, h *runHandle, turn string) (*run, error) {
	head, err := e.store.Head(ctx, session)
	if err != nil {
		return nil, err
	}
	s, last := head.Session, head.LastSeq
	// The turn starts after seq last or not at all: any input queued since comes
	// between, and clears this as the start appends past it. (A queued input's turn
	// looks at the queue as it ends: what else waits is not counted here.)
	h.queueEmpty.Store(turn == "" && head.Queued == 0)
	app, ok := e.apps[s.App]
	if !ok {
		return nil, events.Errorf(events.CodeInvalid, "session %s belongs to app %q, which is not configured", session, s.App)
	}
	agent, ok := app.Agents[s.ActiveAgent]
	if !ok {
		return nil, events.Errorf(events.CodeInvalid, "session %s is with agent %q, which app %s no longer has", session, s.ActiveAgent, app.Name)
	}
	if last != s.LastCommitSeq {
		if lt, err := e.store.LastTurn(ctx, session); err == nil && lt.Status == projection.TurnSuspended {
			return nil, events.Errorf(events.CodeConflict, "turn %s of session %s is suspended: answer its interrupts with resume_map", lt.ID, session)
		}
		if inflight, err := e.inFlight(ctx, session); err != nil || inflight != "" {
			if err != nil {
				return nil, err
			}
			if e.opts.Cluster != nil { // not here (the session was free here): on another node
				return nil, events.Errorf(events.CodeConflict, "session %s is busy on another node: its turn %s is in flight there (or, if that node stopped, until a node recovers it)", session, inflight)
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
		if err := compactable(agent, agent.face(requestShape(app)), conv); err != nil {
			return nil, err
		}
		kind = events.KindCompaction
	}
	if turn == "" {
		turn = e.opts.NewID()
	}
	// The log, the model and every client see the input only after redaction.
	input, policy := app.GuardrailPolicy.transformText(TargetModelInput, input, nil)
	start, err := events.New(turn, "", &events.TurnStarted{Input: input, Agent: agent.Name, Kind: kind, Policy: policy, RequestKey: requestKeyOf(ctx),
		RequestShape: requestShape(app)})
	if err != nil {
		return nil, err
	}
	out, err := e.appendPastQueue(ctx, session, last, []events.Event{start}, true)
	if err != nil {
		return nil, fmt.Errorf("start turn: %w", err)
	}
	e.setRunningTurn(h, turn, out[0].Seq)
	r := e.newRun(ctx, app, agent, session, s.Owner, s.ParentID, turn, out[0].Seq, conv, nil, nil)
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
