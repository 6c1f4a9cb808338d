package fsm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

type refundArgs struct {
	OrderID int `json:"order_id" jsonschema:"minimum=1"`
}

// approvalBundle: the model asks for refund (needs approval) and lookup (free) in one
// response, then answers with the outputs it saw.
type approvalBundle struct {
	testBundle
	refunds, lookups *atomic.Int64
	refundArgs       *atomic.Value
	saw              *atomic.Value
}

func setupApproval(t *testing.T) approvalBundle {
	t.Helper()
	var refunds, lookups atomic.Int64
	var args, saw atomic.Value
	refund := functool.MustNew("refund", "refunds an order", func(_ context.Context, a refundArgs) (any, error) {
		refunds.Add(1)
		args.Store(a.OrderID)
		return map[string]any{"refunded": a.OrderID}, nil
	})
	lookup := functool.MustNew("lookup", "looks an order up", func(_ context.Context, a refundArgs) (any, error) {
		lookups.Add(1)
		return map[string]any{"status": "delivered"}, nil
	})
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			saw.Store(strings.Join(outs, " | "))
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "done"}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"order_id":42}`)},
			{ID: "c2", Name: "refund", Arguments: json.RawMessage(`{"order_id":42}`)},
			{ID: "c3", Name: "lookup", Arguments: json.RawMessage(`{"order_id":7}`)},
		}}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{&approval{refund}, lookup}})
	return approvalBundle{testBundle: b, refunds: &refunds, lookups: &lookups, refundArgs: &args, saw: &saw}
}

// approval marks a tool as needing approval.
type approval struct{ *functool.Tool[refundArgs] }

func (t *approval) Spec() fsm.ToolSpec {
	s := t.Tool.Spec()
	s.NeedsApproval = true
	return s
}

func yes() *bool { v := true; return &v }
func no() *bool  { v := false; return &v }

func (b approvalBundle) suspended(t *testing.T) (*fsm.Result, string) {
	t.Helper()
	res, sid := b.turn(t, "refund order 42")
	if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 1 || res.Interrupts[0].Tool != "refund" {
		t.Fatalf("result = %+v", res)
	}
	if b.refunds.Load() != 0 || b.lookups.Load() != 2 {
		t.Fatalf("while suspended: refund ran %d times, lookups %d (want 0 and 2)", b.refunds.Load(), b.lookups.Load())
	}
	pending, err := b.store.PendingInterrupts(b.ctx, sid)
	if err != nil || len(pending) != 1 || pending[0].ID != res.Interrupts[0].ID || string(pending[0].Arguments) != `{"order_id":42}` {
		t.Fatalf("pending interrupts = %+v, %v", pending, err)
	}
	return res, sid
}

func (b approvalBundle) resume(t *testing.T, sid string, answers map[string]fsm.Answer) (*fsm.Result, error) {
	t.Helper()
	st, err := b.engine.Resume(b.ctx, sid, "reviewer", answers)
	if err != nil {
		return nil, err
	}
	return st.Wait()
}

func TestApprovalRunsTheToolOnlyAfterApproval(t *testing.T) {
	t.Parallel()
	b := setupApproval(t)
	res, sid := b.suspended(t)
	if _, err := b.engine.RunTurn(b.ctx, sid, "another"); !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("a new turn while suspended: err = %v, want conflict", err)
	}
	id := res.Interrupts[0].ID
	done, err := b.resume(t, sid, map[string]fsm.Answer{id: {Confirmed: yes()}})
	if err != nil || done.Status != fsm.StatusCompleted {
		t.Fatalf("resume: %+v %v", done, err)
	}
	if b.refunds.Load() != 1 || b.lookups.Load() != 2 {
		t.Fatalf("after approval: refund ran %d, lookups %d (want 1 and 2: nothing before the suspension ran again)", b.refunds.Load(), b.lookups.Load())
	}
	if got, want := b.saw.Load(), `{"status":"delivered"} | {"refunded":42} | {"status":"delivered"}`; got != want {
		t.Fatalf("the model saw %v, want outputs in call order %v", got, want)
	}
	if p, _ := b.store.PendingInterrupts(b.ctx, sid); len(p) != 0 {
		t.Fatalf("pending after resume: %+v", p)
	}
	// The same answer again changes nothing; a different one is a conflict.
	before, _ := b.store.LastSeq(b.ctx, sid)
	again, err := b.resume(t, sid, map[string]fsm.Answer{id: {Confirmed: yes()}})
	if after, _ := b.store.LastSeq(b.ctx, sid); err != nil || again.Status != fsm.StatusCompleted || after != before {
		t.Fatalf("same answer again: %+v %v, seq %d → %d", again, err, before, after)
	}
	if _, err := b.resume(t, sid, map[string]fsm.Answer{id: {Confirmed: no()}}); !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("a different answer: err = %v, want conflict", err)
	}
	if _, err := b.resume(t, sid, map[string]fsm.Answer{"int_nope": {Confirmed: yes()}}); !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("resume of a turn that is not suspended: err = %v, want conflict", err)
	}
	incremental, _ := b.store.DumpProjections(b.ctx)
	if _, err := b.store.Rebuild(b.ctx); err != nil {
		t.Fatal(err)
	}
	if rebuilt, _ := b.store.DumpProjections(b.ctx); rebuilt != incremental {
		t.Fatalf("rebuild differs:\n%s\n%s", incremental, rebuilt)
	}
}

func TestRejectionReachesTheModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg  *string
		want string
	}{{nil, fsm.DefaultRejection}, {func() *string { s := "refunds need a manager"; return &s }(), "refunds need a manager"}} {
		b := setupApproval(t)
		res, sid := b.suspended(t)
		done, err := b.resume(t, sid, map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: no(), RejectionMessage: tc.msg}})
		if err != nil || done.Status != fsm.StatusCompleted || b.refunds.Load() != 0 {
			t.Fatalf("reject: %+v %v, refunds %d", done, err, b.refunds.Load())
		}
		if saw := b.saw.Load().(string); !strings.Contains(saw, tc.want) || !strings.Contains(saw, `"kind":"rejected"`) {
			t.Fatalf("the model saw %s, want the rejection %q", saw, tc.want)
		}
	}
}

func TestEditedArguments(t *testing.T) {
	t.Parallel()
	b := setupApproval(t)
	res, sid := b.suspended(t)
	id := res.Interrupts[0].ID
	_, err := b.resume(t, sid, map[string]fsm.Answer{id: {Confirmed: yes(), Arguments: json.RawMessage(`{"order_id":0}`)}})
	if !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), "resume_map."+id+".arguments.order_id") {
		t.Fatalf("bad edit: err = %v, want invalid naming the field", err)
	}
	done, err := b.resume(t, sid, map[string]fsm.Answer{id: {Confirmed: yes(), Arguments: json.RawMessage(`{"order_id": 43}`)}})
	if err != nil || done.Status != fsm.StatusCompleted || b.refundArgs.Load() != 43 {
		t.Fatalf("edited: %+v %v, ran with %v", done, err, b.refundArgs.Load())
	}
	evs, _ := b.store.Events(b.ctx, sid, 0)
	found := false
	for _, ev := range evs {
		found = found || ev.Type == events.TypeApprovalResolved && strings.Contains(string(ev.Data), `"arguments":{"order_id":43}`)
	}
	if !found {
		t.Fatal("the reviewer's edit is not recorded")
	}
	// The model is told, in the output it receives, what it proposed and what ran.
	note := fsm.EditedNote(json.RawMessage(`{"order_id":42}`), json.RawMessage(`{"order_id":43}`))
	if saw := b.saw.Load().(string); !strings.Contains(saw, note+"\n\n{\"refunded\":43}") {
		t.Fatalf("the model saw %s, want the note %q", saw, note)
	}
	var noted bool
	for _, ev := range evs {
		if ev.Type == events.TypeToolResulted {
			tr, _ := events.DecodeAs[*events.ToolResulted](ev)
			noted = tr.Note == note && strings.HasPrefix(tr.ModelText(), note+"\n\n") && !strings.Contains(tr.Output, "reviewer")
		}
	}
	if !noted {
		t.Fatal("the recorded result does not carry the note apart from the tool's output")
	}
}

func TestApprovalWithTheProposedArgumentsIsNoEdit(t *testing.T) {
	t.Parallel()
	b := setupApproval(t)
	res, sid := b.suspended(t)
	done, err := b.resume(t, sid, map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: yes(), Arguments: json.RawMessage(`{ "order_id" : 42 }`)}})
	if err != nil || done.Status != fsm.StatusCompleted {
		t.Fatalf("resume: %+v %v", done, err)
	}
	if saw := b.saw.Load().(string); strings.Contains(saw, "reviewer changed") {
		t.Fatalf("the model was told of an edit that changed nothing: %s", saw)
	}
}

func TestResumeMapErrors(t *testing.T) {
	t.Parallel()
	b := setupApproval(t)
	res, sid := b.suspended(t)
	id := res.Interrupts[0].ID
	empty := ""
	for _, tc := range []struct {
		answers map[string]fsm.Answer
		code    events.Code
		mention string
	}{
		{map[string]fsm.Answer{}, events.CodeInvalid, "resume_map"},
		{map[string]fsm.Answer{"int_other": {Confirmed: yes()}}, events.CodeInvalid, "int_other"},
		{map[string]fsm.Answer{id: {}}, events.CodeInvalid, "confirmed"},
		{map[string]fsm.Answer{id: {Confirmed: no(), RejectionMessage: &empty}}, events.CodeInvalid, "rejection_message"},
		{map[string]fsm.Answer{id: {Confirmed: yes(), RejectionMessage: &empty}}, events.CodeInvalid, "rejection_message"},
	} {
		if _, err := b.resume(t, sid, tc.answers); !events.IsCode(err, tc.code) || !strings.Contains(err.Error(), tc.mention) {
			t.Fatalf("%+v: err = %v, want %s mentioning %s", tc.answers, err, tc.code, tc.mention)
		}
	}
	if turn, _ := b.store.LastTurn(b.ctx, sid); turn.Status != projection.TurnSuspended {
		t.Fatalf("bad answers changed the turn: %s", turn.Status)
	}
	// A suspended turn is no branch point.
	if _, err := b.engine.Branch(b.ctx, sid, "alice", fsm.BranchPoint{Turn: res.TurnID}, nil); !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("branch at a suspended turn: err = %v, want conflict", err)
	}
	// A suspended turn can be canceled; its question is closed.
	if turn, err := b.engine.Cancel(b.ctx, sid, res.TurnID, ""); err != nil || turn.Status != projection.TurnCanceled {
		t.Fatalf("cancel while suspended: %+v %v", turn, err)
	}
	if p, _ := b.store.PendingInterrupts(b.ctx, sid); len(p) != 0 {
		t.Fatalf("pending after cancel: %+v", p)
	}
}

// TestEveryPendingInterruptMustBeAnswered: two calls wait in one turn; answering one
// is refused and changes nothing; answering both resumes.
func TestEveryPendingInterruptMustBeAnswered(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int64
	refund, model := countingRefund(&refunds), refundingModel(1, 2)
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{&approval{refund}}})
	res, sid := b.turn(t, "refund both")
	if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 2 || res.Interrupts[0].CallID != "c1" {
		t.Fatalf("result = %+v", res)
	}
	first, second := res.Interrupts[0].ID, res.Interrupts[1].ID
	before, _ := b.store.LastSeq(b.ctx, sid)
	st, err := b.engine.Resume(b.ctx, sid, "r", map[string]fsm.Answer{first: {Confirmed: yes()}})
	if !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), second) || st != nil {
		t.Fatalf("a partial answer: err = %v, want invalid naming %s", err, second)
	}
	if after, _ := b.store.LastSeq(b.ctx, sid); after != before {
		t.Fatalf("a refused answer wrote events: seq %d → %d", before, after)
	}
	st, err = b.engine.Resume(b.ctx, sid, "r", map[string]fsm.Answer{first: {Confirmed: yes()}, second: {Confirmed: no()}})
	if err != nil {
		t.Fatal(err)
	}
	done, err := st.Wait()
	if err != nil || done.Status != fsm.StatusCompleted || refunds.Load() != 1 || !strings.HasPrefix(done.Output, `{"order_id":1} | {"error":{"kind":"rejected"`) {
		t.Fatalf("both answered: %+v %v, refunds %d", done, err, refunds.Load())
	}
}

// TestApprovalExpires uses the engine's injected clock: before the deadline nothing
// happens; after it the call is rejected with the reason, and the turn completes.
func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int64
	refund, model := countingRefund(&refunds), refundingModel(1)
	var now atomic.Int64
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return base.Add(time.Duration(now.Load())) }
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: clock, Synchronous: "OFF"})
	tool := &expiring{approval{refund}, 10 * time.Minute}
	app := &fsm.App{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{"a": {Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{tool}}}}
	e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: clock, NewID: counterIDs("x")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, _ := e.CreateSession(ctx, "test", "alice", nil)
	res, err := e.RunTurn(ctx, s.ID, "refund")
	if err != nil || res.Status != fsm.StatusSuspended {
		t.Fatalf("%+v %v", res, err)
	}
	now.Store(int64(9 * time.Minute))
	if done, err := e.ExpireDue(ctx); err != nil || len(done) != 0 {
		t.Fatalf("before the deadline: %v %v", done, err)
	}
	now.Store(int64(10 * time.Minute))
	done, err := e.ExpireDue(ctx)
	if err != nil || len(done) != 1 || done[0].Status != fsm.StatusCompleted || refunds.Load() != 0 {
		t.Fatalf("at the deadline: %+v %v, refunds %d", done, err, refunds.Load())
	}
	reason := "within 10m0s; it expired and did not run"
	if !strings.Contains(done[0].Output, reason) {
		t.Fatalf("the model saw %q", done[0].Output)
	}
	h, _ := store.History(ctx, s.ID)
	evs, _ := store.Events(ctx, s.ID, 0)
	logged := false
	for _, ev := range evs {
		logged = logged || ev.Type == events.TypeApprovalResolved && strings.Contains(string(ev.Data), reason) && strings.Contains(string(ev.Data), `"by":"turnlog"`)
	}
	if !logged || !strings.Contains(h[2].Output, reason) {
		t.Fatalf("the reason is not in the log (%v) and the history (%+v)", logged, h)
	}
}

type expiring struct {
	approval
	after time.Duration
}

func (t *expiring) Spec() fsm.ToolSpec {
	s := t.approval.Spec()
	s.ExpiresIn = t.after
	return s
}

// countingRefund is a refund tool that counts its runs.
func countingRefund(runs *atomic.Int64) *functool.Tool[refundArgs] {
	return functool.MustNew("refund", "refunds", func(_ context.Context, a refundArgs) (any, error) {
		runs.Add(1)
		return a, nil
	})
}

// refundingModel asks for a refund of each order in one response, then answers with
// the outputs it saw, joined.
func refundingModel(orders ...int) fsm.Model {
	return modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: strings.Join(outs, " | ")}}, nil
		}
		var calls []events.ToolCall
		for i, o := range orders {
			calls = append(calls, events.ToolCall{ID: fmt.Sprintf("c%d", i+1), Name: "refund",
				Arguments: json.RawMessage(fmt.Sprintf(`{"order_id":%d}`, o))})
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: calls}}, nil
	})
}

// TestATurnThatAsksAgainAfterAResumeWaitsAgain: a turn resumed after one approval
// that meets a second one in a later step records a suspension of its own (the log
// and the read models say it waits), and goes on when that is answered too.
func TestATurnThatAsksAgainAfterAResumeWaitsAgain(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int64
	refund := functool.MustNew("refund", "refunds an order", func(_ context.Context, a refundArgs) (any, error) {
		refunds.Add(1)
		return map[string]any{"refunded": a.OrderID}, nil
	})
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		n := 0
		for _, it := range r.Items {
			if it.Type == events.ItemFunctionCallOutput {
				n++
			}
		}
		if n < 2 {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
				{ID: fmt.Sprint("c", n+1), Name: "refund", Arguments: json.RawMessage(fmt.Sprintf(`{"order_id":%d}`, n+1))}}}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "both refunded"}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{&approval{refund}}})
	res, sid := b.turn(t, "refund both")
	for round := 1; round <= 2; round++ {
		if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 1 {
			t.Fatalf("round %d: %+v %v, want suspended", round, res, res.Error)
		}
		turn, err := b.store.LastTurn(b.ctx, sid)
		if err != nil || turn.Status != projection.TurnSuspended {
			t.Fatalf("round %d: the read model says %q, %v", round, turn.Status, err)
		}
		st, err := b.engine.Resume(b.ctx, sid, "r", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: yes()}})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if res, err = st.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if res.Status != fsm.StatusCompleted || refunds.Load() != 2 {
		t.Fatalf("%+v %v after %d refunds", res, res.Error, refunds.Load())
	}
	b.replayFresh(t, sid)
}
