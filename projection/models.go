package projection

import (
	"encoding/json"
	"time"

	"github.com/turnlog/turnlog/events"
)

// Session is the summary read model of a session.
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

// SessionHead is a session's summary with where its log ends and how many inputs
// wait in its queue, read at one moment: what a turn needs to start.
type SessionHead struct {
	Session
	LastSeq int64 // the newest seq of its log
	Queued  int   // inputs waiting in its queue
}

// TurnStatus is where a turn stands, in the one vocabulary every output of turnlog
// uses (the API, streams, webhooks, SQL views, the inspector): running, queued (an
// input waiting in its session's queue, which has no turn row yet), suspended
// (waiting for people), completed, failed, canceled. The turn machine's own states
// and the events' types keep their names (a completed turn ended with TurnCommitted).
type TurnStatus string

const (
	TurnRunning   TurnStatus = "running"
	TurnQueued    TurnStatus = "queued"
	TurnSuspended TurnStatus = "suspended"
	TurnCompleted TurnStatus = "completed"
	TurnFailed    TurnStatus = "failed"
	TurnCanceled  TurnStatus = "canceled"
)

// TurnStatusOf reads a status a client names, taking the word turnlog used before
// for a completed turn ("committed") too; ok is false for any other word.
func TurnStatusOf(s string) (TurnStatus, bool) {
	if s == "committed" {
		return TurnCompleted, true
	}
	switch st := TurnStatus(s); st {
	case TurnRunning, TurnQueued, TurnSuspended, TurnCompleted, TurnFailed, TurnCanceled:
		return st, true
	}
	return "", false
}

// Turn is the read model of one turn.
type Turn struct {
	Session      string       `json:"session_id"`
	ID           string       `json:"turn_id"`
	Status       TurnStatus   `json:"status"`
	Agent        string       `json:"agent"`
	Agents       []string     `json:"agents"` // the agents the turn passed through: its first, then each handoff's
	Input        string       `json:"input"`
	StartSeq     int64        `json:"start_seq"`
	EndSeq       int64        `json:"end_seq,omitempty"`
	StartedAt    time.Time    `json:"started_at"`
	EndedAt      *time.Time   `json:"ended_at,omitempty"`
	ModelCalls   int          `json:"model_calls"`
	ToolCalls    int          `json:"tool_calls"`
	Usage        events.Usage `json:"usage"`
	ModelMS      int64        `json:"model_ms"` // the time its model calls took
	ErrorCode    events.Code  `json:"error_code,omitempty"`
	ErrorMessage string       `json:"error_message,omitempty"`
	EndAgent     string       `json:"end_agent,omitempty"` // active agent after a committed turn
}

// InterruptStatus is where a question to a person stands.
type InterruptStatus string

const (
	InterruptPending  InterruptStatus = "pending"
	InterruptApproved InterruptStatus = "approved"
	InterruptRejected InterruptStatus = "rejected"
	InterruptClosed   InterruptStatus = "closed" // its turn ended without an answer
)

// Interrupt is a question to a person that holds a turn.
type Interrupt struct {
	Session   string          `json:"session_id"`
	Turn      string          `json:"turn_id"`
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Path      string          `json:"path"`
	CallID    string          `json:"call_id,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // guardrail_review: the held response {text, tool_calls}
	Reason    string          `json:"reason,omitempty"`
	// Rule is the guardrail policy or tool policy rule that asks; for the tool policy
	// also the call's risk level, what it acts on, and what to do instead.
	Rule        string          `json:"rule,omitempty"`
	Level       string          `json:"level,omitempty"`
	Resources   []string        `json:"resources,omitempty"`
	Alternative string          `json:"alternative,omitempty"`
	Status      InterruptStatus `json:"status"`
	RequestedAt time.Time       `json:"requested_at"`
}

// AuditEntry is one row of the audit view: a policy decision, a person's answer (to an
// approval or a review), a guardrail that stopped a turn, a guardrail policy match, a
// tool's outcome, a compaction or a skill loaded.
type AuditEntry struct {
	Seq       int64           `json:"seq"`
	Turn      string          `json:"turn_id"`
	At        time.Time       `json:"at"`
	Path      string          `json:"path"`
	Kind      string          `json:"kind"` // decision, approval, review, guardrail, policy, result, compaction, skill, files, revert, grant or recovery
	Tool      string          `json:"tool,omitempty"`
	Outcome   string          `json:"outcome"`
	Rule      string          `json:"rule,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Resources json.RawMessage `json:"resources,omitempty"` // a decision's: what the call acts on, a JSON array of strings; files' and a revert's: the first 50 paths
	ExitCode  *int64          `json:"exit_code,omitempty"`
	Diff      string          `json:"diff,omitempty"`
	// An approval's or a review's: who answered; an approval's arguments as the model
	// proposed them and as they were approved (a reviewer's edit, or the same).
	By       string          `json:"by,omitempty"`
	Proposed json.RawMessage `json:"arguments_proposed,omitempty"`
	Approved json.RawMessage `json:"arguments_approved,omitempty"`
}

// IdempotencyRecord is what a write request's Idempotency-Key stands for: the route
// and body it was first used with (a hash of the canonical JSON), and what it made.
type IdempotencyRecord struct {
	Owner, Key string
	Route      string
	BodyHash   string
	Session    string // the session it acted on, or created
	Turn       string // the turn it started, resumed, canceled or compacted
	StartSeq   int64  // where the request's part of the turn starts (a resume's, not the turn's)
	CreatedAt  time.Time
	ExpiresAt  time.Time
}

// QueueStatus is where a queued input stands.
type QueueStatus string

// Queue statuses.
const (
	QueueWaiting QueueStatus = "queued"
	QueueStarted QueueStatus = "started"
	QueueDropped QueueStatus = "dropped"
)

// QueuedInput is an input waiting for its session to be free (on_busy: enqueue).
type QueuedInput struct {
	Session  string      `json:"session_id"`
	Turn     string      `json:"turn_id"`
	Input    string      `json:"input"`
	By       string      `json:"by"`
	Status   QueueStatus `json:"status"`
	QueuedAt time.Time   `json:"queued_at"`
	Seq      int64       `json:"seq"`
}

// UISession is a browser's sign-in to the web inspector: found by the hash of its
// cookie, it acts as User (an admin when the key it was made with is), and every form
// it posts carries CSRF. KeyHash is the sha256 of the API key it was made with: once
// that key is no longer one of the server's, the sign-in is not either.
type UISession struct {
	IDHash    string
	KeyHash   string
	User      string
	Admin     bool
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
}
