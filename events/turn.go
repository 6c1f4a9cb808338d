package events

const (
	TypeTurnStarted   = "TurnStarted"
	TypeTurnCommitted = "TurnCommitted"
	TypeTurnFailed    = "TurnFailed"
	TypeTurnCanceled  = "TurnCanceled"
	TypeLoopDetected  = "LoopDetected"
)

// TurnStarted opens a turn with the user's input and the agent that starts it.
type TurnStarted struct {
	Input string `json:"input"`
	Agent string `json:"agent"`
	// Kind is empty for a turn that answers Input, KindCompaction for a turn that only
	// compacts the conversation (it has no input).
	Kind string `json:"kind,omitempty"`
	// Policy lists the guardrail policy rules that logged or redacted the input
	// before it was recorded.
	Policy []PolicyMatch `json:"policy,omitempty"`
	// RequestKey is a digest of the Idempotency-Key of the request that started the
	// turn (never the key itself), so that the request sent again finds the turn
	// even when the process that started it ended before it recorded the key's turn.
	RequestKey string `json:"request_key,omitempty"`
	// RequestShape is what the turn's model requests carry: 1, the generated tools and
	// permissions section after the instructions (a turn of an app with a tool
	// policy); 0 (absent), the instructions alone — every turn recorded before the
	// section existed, which replays as it ran.
	RequestShape int `json:"request_shape,omitempty"`
}

// KindCompaction is the kind of a turn that compacts the conversation on request.
const KindCompaction = "compaction"

func (*TurnStarted) EventType() string  { return TypeTurnStarted }
func (*TurnStarted) SchemaVersion() int { return 1 }

// TurnCommitted ends a turn successfully: the conversation items it adds (the user
// input first) and the agent that is active afterwards.
type TurnCommitted struct {
	Items  []Item `json:"items"`
	Agent  string `json:"agent"`
	Output string `json:"output"`
	Usage  Usage  `json:"usage"`
}

func (*TurnCommitted) EventType() string  { return TypeTurnCommitted }
func (*TurnCommitted) SchemaVersion() int { return 1 }

// TurnFailed ends a turn without committing anything.
type TurnFailed struct {
	ErrorCode Code   `json:"error_code"`
	Message   string `json:"message"`
	Path      string `json:"path,omitempty"` // the activity that failed, when one did
	Usage     Usage  `json:"usage"`
}

func (*TurnFailed) EventType() string  { return TypeTurnFailed }
func (*TurnFailed) SchemaVersion() int { return 1 }

// LoopDetected records that the same tool was called with the same canonical
// arguments several times in a row: the model got a hint, or the turn failed.
type LoopDetected struct {
	Tool    string `json:"tool"`
	Repeats int    `json:"repeats"`
	Action  string `json:"action"` // "hint" or "fail"
}

func (*LoopDetected) EventType() string  { return TypeLoopDetected }
func (*LoopDetected) SchemaVersion() int { return 1 }

// TurnCanceled ends a turn that a person stopped; nothing is committed. Tools that
// already ran are not undone.
type TurnCanceled struct {
	Reason string `json:"reason"`
	Usage  Usage  `json:"usage"`
}

func (*TurnCanceled) EventType() string  { return TypeTurnCanceled }
func (*TurnCanceled) SchemaVersion() int { return 1 }
