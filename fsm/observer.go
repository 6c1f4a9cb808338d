package fsm

import "time"

// Observer hears what the engine does, for metrics. Its methods must be cheap and
// must not block: they run on the turn's path.
type Observer interface {
	// ModelCalled reports a live model call (replayed calls are not reported).
	ModelCalled(llm string, took time.Duration, failed bool)
	// ToolCalled reports a live tool call.
	ToolCalled(tool string, took time.Duration, failed bool)
	// TurnEnded reports a turn's end: completed, failed or canceled.
	TurnEnded(status string)
}

type noObserver struct{}

func (noObserver) ModelCalled(string, time.Duration, bool) {}
func (noObserver) ToolCalled(string, time.Duration, bool)  {}
func (noObserver) TurnEnded(string)                        {}
