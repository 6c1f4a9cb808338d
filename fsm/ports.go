package fsm

import (
	"context"
	"encoding/json"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// ModelRequest is everything a model call sends. Items is the whole conversation
// (committed history, then this turn's items); a Model must not keep or modify it.
type ModelRequest struct {
	LLM          string
	Agent        string
	Instructions string
	Tools        []ToolSpec
	Settings     json.RawMessage // canonical JSON of the per-call settings
	Items        []events.Item
	// Purpose is empty for an agent's own calls; PurposeCompaction asks for a
	// compaction summary of Items.
	Purpose string
	// OnText, when set, receives the answer's text as it arrives (streaming models
	// call it; others may not). It is transient: the recorded answer is the response.
	OnText func(delta string)
}

// ModelResponse is a model's answer and what it cost.
type ModelResponse struct {
	events.ModelResponse
	Usage events.Usage
}

// Model is a registered model. Errors: model_failed (the provider failed after its
// own retries); anything else is treated the same way.
type Model interface {
	Call(ctx context.Context, req ModelRequest) (ModelResponse, error)
}

// ToolSpec describes a tool to the model and to the engine.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON schema
	Idempotent  bool            `json:"-"`          // safe to re-run after a crash
	Timeout     time.Duration   `json:"-"`          // the tool's own deadline; expiry is a tool error
	MaxCalls    int             `json:"-"`          // per-turn cap; 0 means the agent default
	ShowErrors  bool            `json:"-"`          // include the error message in the model-visible output
	// NeedsApproval suspends the turn before the tool runs until a person answers.
	NeedsApproval bool `json:"-"`
	// ExpiresIn auto-rejects an approval nobody gave in time (0: waits forever).
	ExpiresIn time.Duration `json:"-"`
}

// ArgumentsValidator is a Tool that can check arguments without running (a
// reviewer's edited arguments are checked when they are given).
type ArgumentsValidator interface {
	ValidateArguments(args json.RawMessage) error
}

// Tool runs one call. Arguments are canonical JSON. The output is JSON; a JSON string
// reaches the model as its text. A returned error (or a panic) is a tool error the
// model sees; an *ArgumentsError names the offending field, a *ToolError carries its
// own kind and the text the model may read.
type Tool interface {
	Spec() ToolSpec
	Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error)
}

// ArgumentsError says the arguments a model sent do not fit the tool's schema.
type ArgumentsError struct {
	Field   string
	Message string
}

func (e *ArgumentsError) Error() string { return "invalid arguments: " + e.Field + ": " + e.Message }

// ToolError is a tool's own account of a failure: its kind (ToolErrFailed when
// empty), a message, and whether the model is shown the message even where the tool
// does not show its errors (a receiver's answer written for the model, a reason the
// model can act on).
type ToolError struct {
	Kind    string
	Message string
	Public  bool
}

func (e *ToolError) Error() string { return e.Message }

// Store is everything the engine needs from persistence, on one node or several:
// the log, the read models, the queue, the watch that wakes readers, and erasure.
// Each store asserts it at compile time; what only several nodes need is Cluster,
// passed on its own (Options.Cluster).
type Store interface {
	events.Log
	ErasureStore
	// AppendUnsynced is Append without waiting for the disk: committed and visible at
	// once, kept by a process crash, safe from a power loss with the next Append. The
	// engine uses it only for events whose loss changes nothing outside turnlog (a
	// turn's start, a person's answers): every step that acts or answers a client
	// after them is an Append, which makes them durable too.
	AppendUnsynced(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error)
	// LastSeq returns the newest seq of a session (0 if none).
	LastSeq(ctx context.Context, session string) (int64, error)
	// Session returns a session summary. Errors: not_found.
	Session(ctx context.Context, id string) (projection.Session, error)
	// Head returns a session's summary with its log's newest seq and its queue's
	// length, read at one moment (one round trip to a database across a network).
	// Errors: not_found.
	Head(ctx context.Context, id string) (projection.SessionHead, error)
	// History returns the committed conversation; a branch's starts with its
	// source's items up to the branch point.
	History(ctx context.Context, session string) ([]events.Item, error)
	// GrantEvents returns a session's own GrantGiven and GrantRevoked events with seq
	// up to upto (0: all), in seq order, at a cost that does not grow with its log.
	GrantEvents(ctx context.Context, session string, upto int64) ([]events.Event, error)
	// Turn returns one turn. Errors: not_found.
	Turn(ctx context.Context, session, turn string) (projection.Turn, error)
	// TurnEndingAt returns the turn whose last event has seq. Errors: not_found.
	TurnEndingAt(ctx context.Context, session string, seq int64) (projection.Turn, error)
	// LastTurn returns a session's newest turn. Errors: not_found.
	LastTurn(ctx context.Context, session string) (projection.Turn, error)
	// SuspendedTurns lists turns waiting for people, across all sessions.
	SuspendedTurns(ctx context.Context) ([]projection.Turn, error)
	// RunningTurns lists turns that started and did not end.
	RunningTurns(ctx context.Context) ([]projection.Turn, error)
	// Queued lists a session's inputs waiting to run, in order; QueuedSessions the
	// sessions that have any.
	Queued(ctx context.Context, session string) ([]projection.QueuedInput, error)
	QueuedSessions(ctx context.Context) ([]string, error)
	// Content returns a file content the undo log holds (a FilesChanged names it by
	// hash; the append of that event wrote it) that session, or a session it was
	// branched from, refers to — checked against its hash. Errors: not_found,
	// corrupt_log.
	Content(ctx context.Context, session, hash string) ([]byte, error)
	// ContentBytes is what the chunks of the contents session refers to hold, each
	// once: the undo log's share of it (UndoCaps.SessionBytes).
	ContentBytes(ctx context.Context, session string) (int64, error)
	// Watch wakes its channel after each commit that touches session, until the
	// returned function is called.
	Watch(session string) (<-chan struct{}, func())
	// Spend reads what budget checks count for q (projection.Spend): the session's
	// spend, its owner's that day in the app, and the extensions given to either, at
	// a cost that does not grow with the logs.
	Spend(ctx context.Context, q projection.SpendQuery) (projection.Spend, error)
	// HealTurnProgress counts a crashed turn's calls and tokens again from its events,
	// for a store that kept them in memory (a store that writes them at every step has
	// nothing to heal).
	HealTurnProgress(ctx context.Context, session, turn string) error
	// Closed says whether the store was closed (a write failing then is not a broken
	// turn to heal).
	Closed() bool
}

// Cluster is what several nodes on one store need of it: sessions' leases, appends
// fenced by them, and the relay that carries a cancel to the node running the turn.
// nil (Options.Cluster) is one node.
type Cluster interface {
	Leaser
	CancelRelay
	// AppendLeased is Append (AppendUnsynced when unsynced) under the session's
	// lease, in the append's own transaction: it takes the lease when lease.Token is
	// 0 (for lease.Node, until lease.TTL from the commit; refused with a conflict
	// while another node holds it), else checks it (refused with a conflict, writing
	// nothing, once lease.Token is no longer the session's) and renews it to
	// lease.TTL from now (0: not renewed; never shortened), and with lease.Release
	// gives it up as the append commits. It returns the lease's token after the
	// append (0 once given up). The engine makes every append of a run on a cluster
	// with it.
	AppendLeased(ctx context.Context, lease Lease, after int64, evs []events.Event, unsynced bool) ([]events.Event, int64, error)
}

// DaySpendFeed is a store of several nodes that has a session's appends read its
// owner's day spend in their own transaction (no round trip of its own), so that a
// run's budget checks see other nodes' calls as of its latest append. latest is what
// the newest append read (false: none since following began); stop ends it.
type DaySpendFeed interface {
	FollowDaySpend(session, day string) (latest func() (map[string]projection.SpendFigures, bool), stop func())
}

// Lease is a session's lease as an append carries it.
type Lease struct {
	Session string
	Token   int64 // the token AcquireLease or an earlier append returned (0: none yet)
	Node    string
	TTL     time.Duration // how long from now it lasts (taken or renewed)
	Release bool          // the append ends the run: the lease goes with it
}

// CallInfo tells a tool which call it is serving.
type CallInfo struct {
	Session, Turn, Agent, Path string
	// User is the session's owner, for whom the tool acts.
	User string
	// Approved: a person approved this very call before it ran.
	Approved bool
	// EarlierRuns counts the runs of the turn that sent this call before this one and
	// went away before its result was recorded (TurnRecovered): 0 for a call sent the
	// first time. An HTTP tool numbers its attempts on from them.
	EarlierRuns int
}

type callInfoKey struct{}

// WithCallInfo gives a tool's context the call it serves (the engine does this for
// every call).
func WithCallInfo(ctx context.Context, ci CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
}

// CallInfoFrom returns the call a tool's context belongs to.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	ci, ok := ctx.Value(callInfoKey{}).(CallInfo)
	return ci, ok
}
