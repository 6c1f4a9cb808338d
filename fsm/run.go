package fsm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/turnlog/turnlog/events"
)

// run is one execution of a turn: it holds the turn's state in memory and appends
// each transition's events; nothing here refolds the session's log.
type run struct {
	e       *Engine
	ctx     context.Context
	app     *App
	agent   *Agent
	session string
	owner   string // the session's owner: tools act for this user
	parent  string // the session it is a branch of ("": none)
	turn    string
	log     *turnLog // shared with the agent runs nested in this one
	conv    *conversation
	input   string // the turn's input as recorded (set for a new turn)
	// startSeq is the turn's TurnStarted; lastCommit the session's last commit before
	// it (what the conversation holds): a revert between them is told the model.
	startSeq, lastCommit int64
	base                 int // committed history length
	rec                  *recording
	logged               *recording // what of the turn is already in this store's log: emit skips it
	m                    *Machine

	usage      events.Usage
	modelCalls map[string]int
	toolCalls  map[string]int
	prevItems  int
	loopKey    string
	loopCount  int
	committed  bool
	startedAt  time.Time       // when the turn started (TurnStarted's time)
	stopped    context.Context // done when a person cancels the turn
	stopper    *runHandle      // ... and why: its reason
	callIDs    map[string]bool // the tool call ids this run's model calls used
	// evidence are the tools whose calls ran in this run, and evidenceChecks each
	// agent's answers require_evidence checked (see checkEvidence).
	evidence       map[string]bool
	evidenceChecks map[string]int
	endSpan        func(SpanEnd) // ends the span of this run (nil: none was started)
	requestID      string        // the request that asked for this run ("" for none)

	// prefix is where a nested agent's activities live: "<caller>/tool/<call id>/";
	// empty for the turn's own agent. A nested run answers its caller instead of
	// committing or failing the turn.
	prefix string
}

// turnLog is a turn's position in its session's log, shared by the turn's own run
// and the agent runs nested in it (which may run concurrently).
type turnLog struct {
	mu  sync.Mutex
	seq int64 // the last seq of this session the turn has seen
	// deferred holds results of idempotent tools: they join the turn's next commit
	// instead of paying an fsync of their own (a crash before it re-runs the tool,
	// which is safe only because it is idempotent).
	deferred []events.Event
	// settle are the hooks of the deferred results' tools (OnRecorded).
	settle []*recordedHooks
	// queued are, in a replay, the recording's inputs queued while the turn ran, by
	// seq: emit appends each where it came, so the replayed log matches.
	queued map[int64]events.Event
	// undo is what the turn's records kept of contents (UndoCaps).
	undo undoKept
	// grants are the session's grants the turn decides under.
	grants turnGrants
	// shape is the turn's request shape (TurnStarted's request_shape).
	shape int
	// budget is what the turn's budget checks count (nil: the app has no budgets).
	budget *turnBudget
	// divergence is the first request a replay found changed (its error names it).
	divergence *NondeterminismError
}

func (l *turnLog) last() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

func (l *turnLog) postpone(ev events.Event, h *recordedHooks) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deferred = append(l.deferred, ev)
	if h != nil {
		l.settle = append(l.settle, h)
	}
}

// settleDeferred tells the deferred results' tools how their results ended.
func (l *turnLog) settleDeferred(recorded bool) {
	l.mu.Lock()
	hooks := l.settle
	l.settle = nil
	l.mu.Unlock()
	for _, h := range hooks {
		h.fire(recorded)
	}
}

func (r *run) canceled() bool {
	select {
	case <-r.stopped.Done():
		return true
	default:
		return false
	}
}

// stopRequested: canceled, or asked to stop at this safe point for new input.
func (r *run) stopRequested() bool {
	if r.canceled() {
		return true
	}
	if r.stopper == nil {
		return false
	}
	select {
	case <-r.stopper.soft:
		return true
	default:
		return false
	}
}

// cancelReason is what the person who canceled the turn said.
func (r *run) cancelReason() string {
	if r.stopper != nil && r.stopRequested() && r.stopper.why() != "" {
		return r.stopper.why()
	}
	return DefaultCancelReason
}

// cancelTurn ends the turn as canceled, recording what is pending first.
func (r *run) cancelTurn(pending ...events.Event) (*Result, error) {
	return r.cancelBecause(r.cancelReason(), pending...)
}

// cancelBecause ends the turn as canceled for reason, recording what is pending first.
func (r *run) cancelBecause(reason string, pending ...events.Event) (*Result, error) {
	if err := r.fire(TriggerCancel); err != nil {
		return nil, err
	}
	ev, err := events.New(r.turn, "", &events.TurnCanceled{Reason: reason, Usage: r.usage})
	if err != nil {
		return nil, err
	}
	if err := r.emit(append(pending, ev)...); err != nil {
		return nil, err
	}
	r.ended(StatusCanceled, events.CodeCanceled, reason)
	return &Result{Session: r.session, TurnID: r.turn, Status: StatusCanceled, Usage: r.usage, Agent: r.agent.Name,
		Error: &ResultError{Code: events.CodeCanceled, Message: reason}}, nil
}

// face is what agent ag's requests carry in this turn's request shape.
func (r *run) face(ag *Agent) *agentFace { return ag.face(r.log.shape) }

func (e *Engine) newRun(ctx context.Context, app *App, agent *Agent, session, owner, parent, turn string, seq int64,
	conv *conversation, rec, logged *recording) *run {
	started, startSeq, shape := e.opts.Clock(), seq, requestShape(app)
	if ts, ok := rec.get(events.TypeTurnStarted, ""); ok {
		started, startSeq = ts.At, ts.Seq // a resumed or recovered turn started then
		shape = 0                         // ... in the shape it recorded
		if p, err := events.DecodeAs[*events.TurnStarted](ts); err == nil {
			shape = p.RequestShape
		}
	}
	return &run{e: e, ctx: ctx, stopped: context.Background(), requestID: RequestIDOf(ctx), app: app, agent: agent, session: session, owner: owner, parent: parent, turn: turn, log: &turnLog{seq: seq, shape: shape},
		startSeq: startSeq, lastCommit: conv.commitSeq,
		conv: conv, base: len(conv.items), prevItems: len(conv.items), rec: rec, logged: logged, startedAt: started,
		m: NewMachine(StateStarted), modelCalls: map[string]int{}, toolCalls: map[string]int{}}
}

// emit appends events that are not already in the log, after any deferred results,
// in one transaction.
func (r *run) emit(evs ...events.Event) error {
	if err := storableEvents(evs); err != nil {
		return err
	}
	settled, err := r.appendBatch(evs)
	for _, h := range settled { // outside the lock: a hook may take long (a rollback)
		h.fire(true)
	}
	return err
}

// appendBatch is emit under the turn log's lock; it returns the hooks of the deferred
// results it made durable.
func (r *run) appendBatch(evs []events.Event) ([]*recordedHooks, error) {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	batch := make([]events.Event, 0, len(r.log.deferred)+len(evs))
	batch = append(batch, r.log.deferred...)
	for _, ev := range evs {
		if r.logged.holds(ev) {
			continue
		}
		batch = append(batch, ev)
	}
	if len(batch) == 0 {
		return nil, nil
	}
	for len(batch) > 0 {
		// A replay appends the recording's facts (queued inputs, recoveries) at the
		// seqs they had, between the events of a batch if that is where they came.
		for {
			q, ok := r.log.queued[r.log.seq+1]
			if !ok {
				break
			}
			if _, err := r.e.appendEvents(r.ctx, r.session, r.log.seq, []events.Event{q}, false); err != nil {
				return nil, fmt.Errorf("append to %s after %d: %w", r.session, r.log.seq, err)
			}
			r.log.seq = q.Seq
		}
		n := len(batch)
		for i := 1; i < n && len(r.log.queued) > 0; i++ {
			if _, ok := r.log.queued[r.log.seq+1+int64(i)]; ok {
				n = i
			}
		}
		out, err := r.e.appendPastQueue(r.ctx, r.session, r.log.seq, batch[:n], false)
		if err != nil {
			return nil, fmt.Errorf("append to %s after %d: %w", r.session, r.log.seq, err)
		}
		r.countDay(out)
		r.log.seq = out[len(out)-1].Seq
		batch = batch[n:]
	}
	r.log.deferred = r.log.deferred[:0]
	settled := r.log.settle
	r.log.settle = nil
	return settled, nil
}

func (r *run) fire(t Trigger) error {
	if err := r.m.Fire(t); err != nil {
		return &events.Error{Code: events.CodeInternal, Message: "turn machine refused a move", Err: err}
	}
	return nil
}

// drive runs the turn from its current point to commit or failure.
func (r *run) drive() (*Result, error) {
	defer func() {
		if !r.committed {
			r.conv.truncate(r.base)
		}
		r.log.settleDeferred(false) // results still deferred never reached the log
	}()
	if err := r.loadBudget(); err != nil {
		return nil, err
	}
	defer r.unfollowDay()
	if err := r.fire(TriggerGuardInput); err != nil {
		return nil, err
	}
	if res, err := r.inputGate(r.conv.items[len(r.conv.items)-1].Content); res != nil || err != nil {
		return res, err
	}
	if len(r.agent.InputGuardrails) > 0 {
		checked, res, err := r.guard("input", r.conv.items[len(r.conv.items)-1].Content, r.agent.InputGuardrails, nil)
		if res != nil || err != nil {
			return res, err
		}
		if err := r.emit(checked...); err != nil {
			return nil, err
		}
	}
	for {
		if r.stopRequested() {
			return r.cancelTurn()
		}
		if err := r.fire(TriggerCallModel); err != nil {
			return nil, err
		}
		resp, called, hold, failure := r.modelStep()
		if hold != nil {
			return r.heldAtBudget(hold, called)
		}
		if failure != nil && r.canceled() {
			return r.cancelTurn(called...)
		}
		if failure != nil {
			return r.fail(failure.Code, failure.Message, failure.Path, called...)
		}
		path := r.prefix + fmt.Sprintf("%s/model/%d", r.agent.Name, r.modelCalls[r.agent.Name])
		res, called, err := r.responseGate(resp, path, called)
		if res != nil || err != nil {
			return res, err
		}
		if len(resp.ToolCalls) == 0 {
			ev, again := r.checkEvidence()
			if ev != nil {
				called = append(called, *ev)
			}
			if !again {
				return r.commit(resp.Text, called...)
			}
			if err := r.fire(TriggerGuardOutput); err != nil { // checked, and sent back
				return nil, err
			}
			if err := r.emit(called...); err != nil {
				return nil, err
			}
			continue
		}
		if err := r.fire(TriggerRunTools); err != nil {
			return nil, err
		}
		if res, err := r.toolStep(resp, called); res != nil || err != nil {
			return res, err
		}
	}
}

// modelStep makes (or replays) the agent's next model call. The ModelCalled event is
// returned, not appended: it shares a transaction with what follows it.
func (r *run) modelStep() (events.ModelResponse, []events.Event, *budgetHold, *ResultError) {
	ag := r.agent
	n := r.modelCalls[ag.Name] + 1
	path := r.prefix + fmt.Sprintf("%s/model/%d", ag.Name, n)
	if n > ag.MaxTurns {
		return events.ModelResponse{}, nil, nil, &ResultError{Code: events.CodeMaxTurns, Path: path,
			Message: fmt.Sprintf("agent %s reached max_turns (%d model calls in one turn)", ag.Name, ag.MaxTurns)}
	}
	r.modelCalls[ag.Name] = n
	f := r.face(ag)
	parts := requestParts(ag, f, r.conv)
	items := r.conv.items
	var compacted []events.Event
	var itemHashes [][32]byte
	var tokens int64                           // the request's, counted by the context manager
	if f.ctxm == nil && r.conv.summaries > 0 { // another agent's summaries: this one sends the whole conversation
		items = withoutSummaries(items)
	}
	if f.ctxm != nil {
		var fail *ResultError
		if items, itemHashes, tokens, compacted, fail = r.contextItems(n); fail != nil {
			return events.ModelResponse{}, nil, nil, fail
		}
		parts.Items = len(items)
	}
	hash := requestHash(ag, f, r.conv)
	if f.ctxm != nil {
		hash = requestHashOf(ag, f, itemHashes)
	}
	newItems := append([]events.Item{}, r.conv.items[r.prevItems:]...)
	r.prevItems = len(r.conv.items)
	if see := r.e.opts.Requests; see != nil {
		see(path, ModelRequest{LLM: ag.LLM, Agent: ag.Name, Instructions: f.rules, Tools: ag.specs, Settings: ag.Settings, Items: items})
	}

	// The budget questions this call met are recorded before it: they decide first.
	asked, k, hold, fail := r.recordedBudget(path)
	compacted = append(compacted, asked...)
	if hold != nil || fail != nil {
		return events.ModelResponse{}, compacted, hold, fail
	}
	mc, ev, found, fail := replayed[*events.ModelCalled](r, events.TypeModelCalled, path,
		fmt.Sprintf("the recording has no response of model %s here, and a replay-only engine calls no model", ag.LLM))
	if fail != nil {
		return events.ModelResponse{}, nil, nil, fail
	}
	if found {
		if mc.RequestHash != hash {
			recItems, err := r.rec.requestItems(r.conv.items[:r.base], path)
			if err != nil {
				return events.ModelResponse{}, nil, nil, &ResultError{Code: events.CodeCorruptLog, Path: path, Message: err.Error()}
			}
			nd := explainMismatch(path, ag.LLM, mc, parts, recItems, r.conv.items)
			return events.ModelResponse{}, nil, nil, r.diverged(nd)
		}
		r.usage = r.usage.Add(mc.Usage)
		r.noteSpend(events.TypeModelCalled, path, ag.Name, mc.Usage, mc.Cost, mc.Day, r.logged.has(events.TypeModelCalled, path))
		r.claimCallIDs(&mc.Response, false)
		return mc.Response, append(compacted, ev), nil, nil
	}
	if r.log.budget != nil {
		if f.ctxm == nil {
			tokens = f.fixedTokens + r.conv.tokens(f.counter)
		}
		reached, hold, fail := r.checkBudget(ag, path, k, tokens)
		if hold != nil || fail != nil {
			if reached != nil {
				compacted = append(compacted, *reached)
			}
			return events.ModelResponse{}, compacted, hold, fail
		}
	}
	callCtx, stop := r.cancelContext()
	defer stop()
	callCtx, endSpan := r.traced(callCtx, SpanStart{Operation: SpanChat, Name: ag.LLM, Path: path})
	began, clockBegan := time.Now(), r.e.opts.Clock()
	resp, err := ag.Model.Call(callCtx, ModelRequest{LLM: ag.LLM, Agent: ag.Name, Instructions: f.rules,
		Tools: ag.specs, Settings: ag.Settings, Items: items,
		OnText: r.onText(path)})
	cost, calledAt := r.app.costOf(ag.LLM, resp.Usage), r.e.opts.Clock()
	day := r.app.recordedDay(calledAt)
	r.e.opts.Observer.ModelCalled(ModelCall{App: r.app.Name, Agent: ag.Name, LLM: ag.LLM, Took: time.Since(began), Failed: err != nil, Usage: resp.Usage, Cost: cost})
	endSpan(modelSpanEnd(resp.Usage, err))
	if err != nil {
		return events.ModelResponse{}, nil, nil, &ResultError{Code: events.CodeModelFailed, Path: path,
			Message: fmt.Sprintf("model %s failed: %v", ag.LLM, err)}
	}
	var policy []events.PolicyMatch
	resp.Text, policy = r.app.GuardrailPolicy.transformText(TargetModelOutput, resp.Text, nil)
	r.claimCallIDs(&resp.ModelResponse, true)
	for i, c := range resp.ToolCalls {
		canon, err := events.Canonicalize(c.Arguments)
		if err == nil {
			err = events.StoreLimits.Check(canon) // the model reads why, as for malformed arguments
		}
		if err != nil {
			canon = events.MustMarshal(map[string]string{"unparsed_arguments": string(c.Arguments)})
			resp.ToolCalls[i].Invalid = err.Error()
			if ce := (*events.CanonicalError)(nil); errors.As(err, &ce) {
				resp.ToolCalls[i].Invalid = ce.Path + ": " + ce.Reason
			} else if te := (*events.Error)(nil); errors.As(err, &te) {
				resp.ToolCalls[i].Invalid = "arguments." + te.Error()
			}
		}
		if canon, policy, err = r.app.GuardrailPolicy.transformJSON(TargetToolInput, canon, policy); err != nil {
			return events.ModelResponse{}, nil, nil, &ResultError{Code: events.CodeInternal, Path: path, Message: err.Error()}
		}
		resp.ToolCalls[i].Arguments = canon
	}
	ev, err = events.New(r.turn, path, &events.ModelCalled{Agent: ag.Name, LLM: ag.LLM, RequestHash: hash,
		Parts: parts, NewItems: newItems, Response: resp.ModelResponse, Usage: resp.Usage, DurationMS: calledAt.Sub(clockBegan).Milliseconds(),
		Cost: cost, Day: day, Policy: mergeMatches(policy)})
	if err == nil {
		err = events.StoreLimits.Check(ev.Data)
	}
	if err != nil {
		return events.ModelResponse{}, nil, nil, &ResultError{Code: events.CodeInvalidModelOutput, Path: path,
			Message: fmt.Sprintf("model %s answered what turnlog's log cannot keep: %v", ag.LLM, err)}
	}
	r.usage = r.usage.Add(resp.Usage)
	r.noteSpend(events.TypeModelCalled, path, ag.Name, resp.Usage, cost, day, false)
	return resp.ModelResponse, append(compacted, ev), nil, nil
}

// claimCallIDs keeps tool call ids unique within the run: a live response's id that
// is empty or was already used in this turn is renamed (<id>_2, <id>_3, …) before it
// is recorded, so a replay reads the renamed ids back and claims them the same way.
func (r *run) claimCallIDs(resp *events.ModelResponse, rename bool) {
	if r.callIDs == nil {
		r.callIDs = map[string]bool{}
	}
	for i := range resp.ToolCalls {
		id := resp.ToolCalls[i].ID
		if rename {
			base := id
			if base == "" {
				base = "call"
				id = base
			}
			for n := 2; r.callIDs[id]; n++ {
				id = fmt.Sprintf("%s_%d", base, n)
			}
			resp.ToolCalls[i].ID = id
		}
		r.callIDs[id] = true
	}
}

func specsOf(tools []Tool) []ToolSpec {
	specs := make([]ToolSpec, len(tools))
	for i, t := range tools {
		specs[i] = t.Spec()
	}
	return specs
}

func (r *run) commit(text string, pending ...events.Event) (*Result, error) {
	r.conv.append(events.AssistantMessage(r.agent.Name, text))
	if err := r.fire(TriggerGuardOutput); err != nil {
		return nil, err
	}
	if len(r.agent.OutputGuardrails) > 0 {
		checked, res, err := r.guard("output", text, r.agent.OutputGuardrails, pending)
		if res != nil || err != nil {
			return res, err
		}
		pending = checked
	}
	if err := r.fire(TriggerCommit); err != nil {
		return nil, err
	}
	items := append([]events.Item{}, r.conv.items[r.base:]...)
	ev, err := events.New(r.turn, "", &events.TurnCommitted{Items: items, Agent: r.agent.Name, Output: text, Usage: r.usage})
	if err != nil {
		return nil, err
	}
	if err := r.emit(append(pending, ev)...); err != nil {
		return nil, err
	}
	r.committed = true
	r.e.remember(r.session, r.log.last(), r.conv)
	r.ended(StatusCompleted, "", "")
	return &Result{Session: r.session, TurnID: r.turn, Status: StatusCompleted, Output: text, Items: items,
		Usage: r.usage, Agent: r.agent.Name}, nil
}

// fail ends the turn without committing; pending events (a model call that was made)
// are recorded with the failure.
func (r *run) fail(code events.Code, msg, path string, pending ...events.Event) (*Result, error) {
	msg = storableMessage(msg) // it may quote a provider's or a tool's words
	if err := r.fire(TriggerFail); err != nil {
		return nil, err
	}
	if r.prefix != "" { // a nested run records what it did; its caller ends the turn
		if err := r.emit(pending...); err != nil {
			return nil, err
		}
		return &Result{Session: r.session, TurnID: r.turn, Status: StatusFailed, Usage: r.usage, Agent: r.agent.Name,
			Error: &ResultError{Code: code, Message: msg, Path: path}}, nil
	}
	ev, err := events.New(r.turn, "", &events.TurnFailed{ErrorCode: code, Message: msg, Path: path, Usage: r.usage})
	if err != nil {
		return nil, err
	}
	if err := r.emit(append(pending, ev)...); err != nil {
		return nil, err
	}
	r.ended(StatusFailed, code, msg)
	agent := ""
	if r.agent != nil {
		agent = r.agent.Name
	}
	return &Result{Session: r.session, TurnID: r.turn, Status: StatusFailed, Usage: r.usage, Agent: agent,
		Error: &ResultError{Code: code, Message: msg, Path: path}}, nil
}

// cancelContext is the run's context, also cancelled when a person cancels the turn,
// so a long model call stops early.
func (r *run) cancelContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(r.ctx)
	unhook := context.AfterFunc(r.stopped, cancel) // no goroutine waits for it
	return ctx, func() { unhook(); cancel() }
}

// onText publishes a model's text as it arrives, unless the agent's answer must pass
// output guardrails or the guardrail policy first: then nothing is released before the
// whole answer passes.
func (r *run) onText(path string) func(string) {
	// A nested agent's text goes out from the log, between its subagent_start and
	// subagent_end, in the log's order.
	if len(r.agent.OutputGuardrails) > 0 || r.app.GuardrailPolicy.holdsModelText() || r.prefix != "" || r.holdsForEvidence() {
		return nil
	}
	var after int64
	n, live := 0, true
	return func(delta string) {
		if n == 0 {
			// What the answer is computed from must reach the log first: results held
			// for the next commit (idempotent tools, agent tools) are committed now, and
			// every delta says which seq a stream must have sent before it. If that
			// commit fails, no text goes out live: the recorded answer comes in order.
			live = r.emit() == nil
			after = r.log.last()
		}
		if live {
			r.e.deltas.publish(Delta{Session: r.session, Turn: r.turn, Path: path, Text: delta, After: after, Index: n})
		}
		n++
	}
}

// diverged is the failure of a request that differs from the recorded one: kept on
// the run (shared through its turn log by nested runs) for the replay to name.
func (r *run) diverged(nd *NondeterminismError) *ResultError {
	r.log.mu.Lock()
	if r.log.divergence == nil {
		r.log.divergence = nd
	}
	r.log.mu.Unlock()
	return &ResultError{Code: events.CodeNondeterminism, Path: nd.Path, Message: nd.Error()}
}
