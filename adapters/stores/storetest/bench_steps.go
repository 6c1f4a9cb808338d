package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/models/scripted"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
)

// Engine steps as the step benchmarks run them: 200 turns of StepAgent's 10 steps.
const (
	BenchTurns        = 200
	BenchStepsPerTurn = 10
)

type stepArgs struct {
	I int `json:"i"`
}

// StepAgent is a ReAct loop of BenchStepsPerTurn instant tool steps per turn on the
// scripted model: each tool output tells the model the next argument, and the last
// ends the turn. Its tool is idempotent or not as asked.
func StepAgent(tb testing.TB, idempotent bool) *fsm.Agent {
	model, err := scripted.New([]scripted.Rule{
		{When: scripted.When{AfterTool: "step", Output: fmt.Sprintf(`"next":%d\b`, BenchStepsPerTurn)}, Reply: "done"},
		{When: scripted.When{AfterTool: "step"}, Tools: []scripted.ToolCall{{Name: "step", Arguments: `{"i": {{output.next}}}`}}},
		{Tools: []scripted.ToolCall{{Name: "step", Arguments: `{"i": 0}`}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	step := functool.MustNew("step", "an instant no-op step", func(_ context.Context, a stepArgs) (any, error) {
		return map[string]int{"next": a.I + 1}, nil
	})
	return &fsm.Agent{Name: "react", LLM: "scripted", Model: model, Tools: []fsm.Tool{idempotence{step, idempotent}},
		MaxTurns: BenchStepsPerTurn + 1, MaxToolCalls: BenchStepsPerTurn}
}

// idempotence declares whether a tool may be run again after a crash.
type idempotence struct {
	fsm.Tool
	idempotent bool
}

func (t idempotence) Spec() fsm.ToolSpec {
	s := t.Tool.Spec()
	s.Idempotent = t.idempotent
	return s
}

// BenchEngineSteps runs the engine on a store h opens: one session, 200 turns of 10
// steps each (a scripted model calls an instant tool that is not idempotent, so
// every step makes two durable commits), and reports the per-step p50 at turns 1
// and 200 and their ratio — whether a step's cost stays flat as the history grows.
// Every store runs the same code, so their figures compare.
func BenchEngineSteps(b *testing.B, h Harness) {
	agent := StepAgent(b, false)
	app := &fsm.App{Name: "bench", StartAgent: agent.Name, Agents: map[string]*fsm.Agent{agent.Name: agent}}
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		var n atomic.Int64
		s := h.Open(b)
		e, err := fsm.New(s, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: func() string { return fmt.Sprintf("b%08d", n.Add(1)) }, Cluster: h.cluster(s)})
		if err != nil {
			b.Fatal(err)
		}
		perStep := StepTurns(b, e, nil)
		t1, t200 := StepP50(perStep, 1), StepP50(perStep, 200)
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		b.ReportMetric(ms(t1), "step-p50-turn1-ms")
		b.ReportMetric(ms(t200), "step-p50-turn200-ms")
		b.ReportMetric(float64(t200)/float64(t1), "turn200/turn1")
	}
}

// StepTurns runs BenchTurns turns of StepAgent on a new session of e, timing only
// the turns (the timer is stopped on entry and on return), and returns each turn's
// time per step. between, when set, runs before each turn, untimed.
func StepTurns(b *testing.B, e *fsm.Engine, between func()) []time.Duration {
	ctx := context.Background()
	s, err := e.CreateSession(ctx, "bench", "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	perStep := make([]time.Duration, BenchTurns)
	for turn := range BenchTurns {
		if between != nil {
			between()
		}
		b.StartTimer()
		start := time.Now()
		res, err := e.RunTurn(ctx, s.ID, "run the loop")
		took := time.Since(start)
		b.StopTimer()
		if err != nil || res.Status != fsm.StatusCompleted {
			b.Fatalf("turn %d: %v %+v", turn+1, err, res)
		}
		perStep[turn] = took / BenchStepsPerTurn
	}
	return perStep
}

// StepP50 is the per-step p50 over the 10 turns around turn (1-based, clamped): a
// noisy disk moves one turn's figure.
func StepP50(perStep []time.Duration, turn int) time.Duration {
	lo := min(max(turn-6, 0), len(perStep)-10)
	s := slices.Clone(perStep[lo : lo+10])
	slices.Sort(s)
	return s[len(s)/2]
}
