package fsm

import "github.com/turnlog/turnlog/events"

// Turn outcomes as the API reports them, in the words of projection.TurnStatus.
const (
	StatusCompleted = "completed"
	StatusSuspended = "suspended"
	StatusFailed    = "failed"
	// StatusCanceled is a canceled turn's (its Result's Error has the code canceled
	// and the reason).
	StatusCanceled = "canceled"
)

// Result is the outcome of running (or recovering) a turn.
type Result struct {
	Session string        `json:"session_id"`
	TurnID  string        `json:"turn_id"`
	Status  string        `json:"status"`
	Output  string        `json:"output"`
	Items   []events.Item `json:"items"`
	Error   *ResultError  `json:"error,omitempty"`
	Usage   events.Usage  `json:"usage"`
	Agent   string        `json:"agent"`
	// Interrupts are the questions a suspended turn waits for, in call order.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
}

// ResultError is a failed turn's typed error.
type ResultError struct {
	Code    events.Code `json:"code"`
	Message string      `json:"message"`
	Path    string      `json:"path,omitempty"`
}
