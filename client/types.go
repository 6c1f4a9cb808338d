package client

import (
	"encoding/json"
	"time"
)

// Session is a session as created or listed.
type Session struct {
	ID            string          `json:"id"`
	App           string          `json:"app"`
	Owner         string          `json:"owner"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
	ActiveAgent   string          `json:"active_agent"`
	TurnCount     int             `json:"turn_count"`
	LastCommitSeq int64           `json:"last_commit_seq"`
	ParentID      string          `json:"parent_id,omitempty"`
	ParentSeq     int64           `json:"parent_seq,omitempty"`
	ParentTurn    string          `json:"parent_turn,omitempty"`
}

// SessionSummary is GET /v1/sessions/{id}: the session, whether it is idle, running
// or waiting for people, its queue's length and, for a branch, where it started.
type SessionSummary struct {
	Session
	Status string      `json:"status"`
	Queued int         `json:"queued"`
	Parent *BranchedAt `json:"parent,omitempty"`
}

// BranchedAt is the turn end of the source a branch started from.
type BranchedAt struct {
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
	TurnID    string `json:"turn_id"`
}

// SessionPage is a page of sessions, newest first.
type SessionPage struct {
	Sessions   []Session `json:"sessions"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// Item is one entry of a conversation.
type Item struct {
	Type              string          `json:"type"`
	Role              string          `json:"role,omitempty"`
	Content           string          `json:"content,omitempty"`
	Agent             string          `json:"agent,omitempty"`
	CallID            string          `json:"call_id,omitempty"`
	Name              string          `json:"name,omitempty"`
	Arguments         json.RawMessage `json:"arguments,omitempty"`
	Output            string          `json:"output,omitempty"`
	Covers            int             `json:"covers,omitempty"`
	ProposedArguments json.RawMessage `json:"proposed_arguments,omitempty"` // history: a call a reviewer edited
	EditedBy          string          `json:"edited_by,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Interrupt is a question to a person that holds a turn: a tool_approval (CallID,
// Tool, Arguments; Rule, Level, Resources, Alternative and the Grant pattern a yes for
// the session covers when the tool policy asks) or a guardrail_review (Rule;
// Arguments is the held response {text, tool_calls}).
type Interrupt struct {
	ID          string          `json:"id"`
	Kind        string          `json:"kind"`
	Path        string          `json:"path"`
	CallID      string          `json:"call_id,omitempty"`
	Tool        string          `json:"tool,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	Rule        string          `json:"rule,omitempty"`
	Level       string          `json:"level,omitempty"`
	Resources   []string        `json:"resources,omitempty"`
	Alternative string          `json:"alternative,omitempty"`
	Grant       string          `json:"grant,omitempty"`
}

// PendingInterrupt is an interrupt as GET …/interrupts lists it.
type PendingInterrupt struct {
	Interrupt
	SessionID   string    `json:"session_id"`
	TurnID      string    `json:"turn_id"`
	Status      string    `json:"status"`
	RequestedAt time.Time `json:"requested_at"`
}

// Answer answers one interrupt: Confirmed (with RejectionMessage, or Arguments to
// edit the call) for a tool_approval, Decision (with ReviewerNotes) for a
// guardrail_review.
type Answer struct {
	Confirmed        *bool           `json:"confirmed,omitempty"`
	RejectionMessage string          `json:"rejection_message,omitempty"`
	Arguments        json.RawMessage `json:"arguments,omitempty"`
	Decision         string          `json:"decision,omitempty"`
	ReviewerNotes    string          `json:"reviewer_notes,omitempty"`
	// Grant, with a yes to a question the tool policy asked, says yes for the rest of
	// the session to the commands its pattern names.
	Grant *GrantPattern `json:"grant,omitempty"`
	// Extend answers a budget question: the amounts the budget grows by (Decision
	// "stop" ends the turn instead).
	Extend *BudgetAmounts `json:"extend,omitempty"`
}

// BudgetAmounts are tokens and cost: a budget's limit, what was spent, or an
// extension.
type BudgetAmounts struct {
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	TotalTokens  int64   `json:"total_tokens,omitempty"`
	Cost         float64 `json:"cost,omitempty"`
}

// GrantPattern names what a grant covers: Command, an argv prefix word by word
// ("git push"), or Prefix, a literal prefix of a command's words; neither: the
// program and subcommand of the call's first command that asks.
type GrantPattern struct {
	Command string `json:"command,omitempty"`
	Prefix  string `json:"prefix,omitempty"`
}

// Spend is what a session's model calls spent, by agent — in the session, its latest
// turn, and its owner's day in the app — and each budget of its app against it.
type Spend struct {
	Session map[string]SpendFigures `json:"session"`
	Turn    map[string]SpendFigures `json:"turn"`
	Day     string                  `json:"day"`
	UserDay map[string]SpendFigures `json:"user_day"`
	Budgets []BudgetStatus          `json:"budgets"`
}

// SpendFigures are what model calls spent: how many, their usage, their cost.
type SpendFigures struct {
	Calls int64   `json:"calls"`
	Usage Usage   `json:"usage"`
	Cost  float64 `json:"cost"`
}

// BudgetStatus is one budget against its spend: scope (turn, session, user_day),
// level (app, agent), the limit with the extensions given, what its scope spent.
type BudgetStatus struct {
	Scope string        `json:"scope"`
	Level string        `json:"level"`
	Agent string        `json:"agent,omitempty"`
	Day   string        `json:"day,omitempty"`
	Limit BudgetAmounts `json:"limit"`
	Spent BudgetAmounts `json:"spent"`
}

// Plan is an agent's plan (update_plan): a goal and steps, and the call that set it.
type Plan struct {
	Goal    string     `json:"goal,omitempty"`
	Items   []PlanItem `json:"items"`
	Session string     `json:"session_id"`
	Turn    string     `json:"turn_id"`
	Seq     int64      `json:"seq"`
	Path    string     `json:"path"`
	At      time.Time  `json:"at"`
}

// PlanItem is one step of a plan: pending, in_progress or done.
type PlanItem struct {
	Text   string `json:"text"`
	Status string `json:"status"`
}

// Grant is what a person said yes to for the rest of a session, and its revocation.
type Grant struct {
	ID      string       `json:"grant_id"`
	Agent   string       `json:"agent"`
	Tool    string       `json:"tool"`
	Command string       `json:"command,omitempty"`
	Prefix  string       `json:"prefix,omitempty"`
	By      string       `json:"by"`
	At      time.Time    `json:"at"`
	Session string       `json:"session_id"`
	Turn    string       `json:"turn_id"`
	Holds   bool         `json:"holds"`
	Revoked *GrantRevoke `json:"revoked,omitempty"`
}

// GrantRevoke says who ended a grant, when and why.
type GrantRevoke struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// Approve, Reject and Edit are the answers to a tool approval.
func Approve() Answer { t := true; return Answer{Confirmed: &t} }

// Extend answers a budget question: the budget grows by a.
func Extend(a BudgetAmounts) Answer { return Answer{Extend: &a} }

// StopAtBudget answers a budget question: the turn ends canceled.
func StopAtBudget() Answer { return Answer{Decision: "stop"} }

// ApproveForSession approves the call and, for the rest of the session, the calls
// the pattern names (the zero pattern: the call's program and subcommand).
func ApproveForSession(p GrantPattern) Answer {
	a := Approve()
	a.Grant = &p
	return a
}

// Reject refuses the call; the model is told message (or the default when empty).
func Reject(message string) Answer {
	f := false
	return Answer{Confirmed: &f, RejectionMessage: message}
}

// Edit approves the call with other arguments.
func Edit(arguments json.RawMessage) Answer {
	t := true
	return Answer{Confirmed: &t, Arguments: arguments}
}

// TurnRequest is the body of POST …/turns: Input for a new turn, or ResumeMap to
// answer a suspended one. Stream is set by StreamTurn.
type TurnRequest struct {
	Input      string            `json:"input,omitempty"`
	ResumeMap  map[string]Answer `json:"resume_map,omitempty"`
	Stream     bool              `json:"stream,omitempty"`
	Background bool              `json:"background,omitempty"`
	OnBusy     string            `json:"on_busy,omitempty"` // reject, enqueue or interrupt
}

// TurnError is why a turn failed.
type TurnError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Path    string `json:"path,omitempty"`
}

// Turn statuses: one vocabulary in every answer, stream and webhook.
const (
	StatusRunning   = "running"
	StatusQueued    = "queued"
	StatusSuspended = "suspended"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCanceled  = "canceled"
)

// TurnResult is a turn's outcome (status completed, suspended, failed or canceled;
// the turn resource also says running or queued). A 202 answer (background, or a
// queued input) fills TurnID, Status, Location and Position only.
type TurnResult struct {
	TurnID         string      `json:"turn_id"`
	Status         string      `json:"status"`
	Output         string      `json:"output"`
	Items          []Item      `json:"items"`
	Interrupts     []Interrupt `json:"interrupts"`
	SuspendPayload *Interrupt  `json:"suspend_payload"`
	Error          *TurnError  `json:"error"`
	Usage          Usage       `json:"usage"`
	Agent          string      `json:"agent"`
	Location       string      `json:"location,omitempty"`
	Position       int         `json:"position,omitempty"`
}

// Turn is a turn as GET …/turns lists it.
type Turn struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	// Status is running, suspended, completed, failed or canceled.
	Status       string     `json:"status"`
	Agent        string     `json:"agent"`
	Agents       []string   `json:"agents"`
	Input        string     `json:"input"`
	StartSeq     int64      `json:"start_seq"`
	EndSeq       int64      `json:"end_seq,omitempty"`
	StartedAt    time.Time  `json:"started_at"`
	EndedAt      *time.Time `json:"ended_at,omitempty"`
	ModelCalls   int        `json:"model_calls"`
	ToolCalls    int        `json:"tool_calls"`
	Usage        Usage      `json:"usage"`
	ErrorCode    string     `json:"error_code,omitempty"`
	ErrorMessage string     `json:"error_message,omitempty"`
	EndAgent     string     `json:"end_agent,omitempty"`
}

// AuditEntry is one row of a session's audit.
type AuditEntry struct {
	Seq       int64           `json:"seq"`
	TurnID    string          `json:"turn_id"`
	At        time.Time       `json:"at"`
	Path      string          `json:"path"`
	Kind      string          `json:"kind"`
	Tool      string          `json:"tool,omitempty"`
	Outcome   string          `json:"outcome"`
	Rule      string          `json:"rule,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Resources []string        `json:"resources,omitempty"`
	ExitCode  *int64          `json:"exit_code,omitempty"`
	Diff      string          `json:"diff,omitempty"`
	By        string          `json:"by,omitempty"`
	Proposed  json.RawMessage `json:"arguments_proposed,omitempty"`
	Approved  json.RawMessage `json:"arguments_approved,omitempty"`
}

// Event is one event of the log.
type Event struct {
	Session string          `json:"session"`
	Seq     int64           `json:"seq"`
	Turn    string          `json:"turn,omitempty"`
	Type    string          `json:"type"`
	Path    string          `json:"path,omitempty"`
	V       int             `json:"v"`
	Data    json.RawMessage `json:"data"`
	At      time.Time       `json:"at"`
}

// BranchPoints are a session's committed turn ends and the branches made there.
type BranchPoints struct {
	SessionID    string        `json:"session_id"`
	Parent       *BranchedAt   `json:"parent"`
	BranchPoints []BranchPoint `json:"branch_points"`
}

// BranchPoint is one committed turn end.
type BranchPoint struct {
	TurnID      string     `json:"turn_id"`
	Seq         int64      `json:"seq"`
	CommittedAt *time.Time `json:"committed_at"`
	Agent       string     `json:"agent"`
	Branches    []string   `json:"branches"`
}

// BranchRequest names where to branch: a committed turn, or its end's seq.
type BranchRequest struct {
	AtTurn   string          `json:"at_turn,omitempty"`
	AtSeq    int64           `json:"at_seq,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Files is what the branch's workspace files are: "restore" or "keep" (""
	// the app's workspace scope's default; see docs/api.md).
	Files string `json:"files,omitempty"`
}

// Delivery is one webhook delivery.
type Delivery struct {
	ID          string     `json:"id"`
	App         string     `json:"app"`
	Webhook     string     `json:"webhook"`
	Event       string     `json:"event"`
	SessionID   string     `json:"session_id"`
	TurnID      string     `json:"turn_id"`
	Seq         int64      `json:"seq"`
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	NextAt      *time.Time `json:"next_at,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
	LastStatus  int        `json:"last_status,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
}

// DeliveryPage is a page of deliveries; Next, when set, is the After of the next.
type DeliveryPage struct {
	Deliveries []Delivery `json:"deliveries"`
	Next       string     `json:"next,omitempty"`
}

// DeliveryFilter narrows a listing of deliveries.
type DeliveryFilter struct {
	Status, Webhook, SessionID, After string
	Limit                             int
}

// ErasureReceipt is what an erasure removed, when and at whose request: counts and
// ids, never content. Scrubbed is set on the answer to an erasure only.
type ErasureReceipt struct {
	ID       string        `json:"id"`
	Kind     string        `json:"kind"`
	Subject  string        `json:"subject"`
	By       string        `json:"by"`
	At       time.Time     `json:"at"`
	Sessions []string      `json:"sessions"`
	Counts   ErasureCounts `json:"counts"`
	Scrubbed *bool         `json:"scrubbed,omitempty"`
}

// ErasureCounts are the rows an erasure removed, by kind.
type ErasureCounts struct {
	Sessions        int `json:"sessions"`
	Events          int `json:"events"`
	Blobs           int `json:"blobs"`
	Turns           int `json:"turns"`
	SuspendedTurns  int `json:"suspended_turns_canceled"`
	HistoryItems    int `json:"history_items"`
	Interrupts      int `json:"interrupts"`
	QueuedInputs    int `json:"queued_inputs"`
	Memories        int `json:"memories"`
	IdempotencyKeys int `json:"idempotency_keys"`
	Deliveries      int `json:"webhook_deliveries"`
	SignIns         int `json:"sign_ins"`
}

// ErasurePage is a page of receipts; Next, when set, is the after of the next.
type ErasurePage struct {
	Erasures []ErasureReceipt `json:"erasures"`
	Next     string           `json:"next,omitempty"`
}

// Revert is a revert of a session's files, recorded.
type Revert struct {
	ID      string   `json:"revert_id"`
	Session string   `json:"session_id"`
	Turns   []string `json:"turns,omitempty"`
	Revert  string   `json:"revert,omitempty"`
	// Paths are the first 50 paths it changed; Count all of them.
	Paths       []string         `json:"paths"`
	Count       int              `json:"count"`
	Overwritten []RevertConflict `json:"overwritten,omitempty"`
	Seq         int64            `json:"seq"`
}

// RevertConflict is a path a revert found changed since: each side a content's hash,
// "absent", "a directory" or "a symlink to …".
type RevertConflict struct {
	Path     string `json:"path"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
}

// FilesChanged is what one call of a turn changed in its workspace.
type FilesChanged struct {
	CallID    string       `json:"call_id"`
	Tool      string       `json:"tool"`
	Workspace string       `json:"workspace,omitempty"`
	Changes   []FileChange `json:"changes"`
}

// FileChange is one path: Before or After is nil where there was or is nothing.
type FileChange struct {
	Path          string     `json:"path"`
	Before        *FileState `json:"before,omitempty"`
	After         *FileState `json:"after,omitempty"`
	NotRevertible string     `json:"not_revertible,omitempty"`
}

// FileState is a workspace entry as it was or is.
type FileState struct {
	Kind   string `json:"kind"`
	Mode   uint32 `json:"mode"`
	UID    uint32 `json:"uid"`
	GID    uint32 `json:"gid"`
	Mtime  string `json:"mtime"`
	Size   int64  `json:"size,omitempty"`
	Hash   string `json:"hash,omitempty"`
	Target string `json:"target,omitempty"`
}
