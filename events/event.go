package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Event is one row of the log: (session, seq, turn, type, path, data, at), plus the
// schema version of its data. Data is canonical JSON.
type Event struct {
	Session string          `json:"session"`
	Seq     int64           `json:"seq"`
	Turn    string          `json:"turn,omitempty"`
	Type    string          `json:"type"`
	Path    string          `json:"path,omitempty"`
	V       int             `json:"v"`
	Data    json.RawMessage `json:"data"`
	At      time.Time       `json:"at"`

	// Contents are the file contents a FilesChanged or WorkspaceReverted event names,
	// which the store holds with it (referenced by the session) in the same append.
	// Never encoded with the event; events read back have none.
	Contents []Content `json:"-"`

	// payload is the typed body an event was built from, so that folding a fresh
	// event does not decode its own data again. Events read back have none.
	payload Payload
}

// Payload is a typed event body. EventType is the stable name stored in the log.
type Payload interface {
	EventType() string
	SchemaVersion() int
}

// New builds an event from a payload; Session, Seq and At are filled by the store.
func New(turn, path string, p Payload) (Event, error) {
	data, err := Marshal(p)
	if err != nil {
		return Event{}, fmt.Errorf("encode %s: %w", p.EventType(), err)
	}
	return Event{Turn: turn, Type: p.EventType(), Path: path, V: p.SchemaVersion(), Data: data, payload: p}, nil
}

// MustNew is New for payloads turnlog builds itself from already-canonical parts.
func MustNew(turn, path string, p Payload) Event {
	ev, err := New(turn, path, p)
	if err != nil {
		panic(err)
	}
	return ev
}

// Decode returns the typed payload of ev. An unknown type or version, or data that does
// not fit the type, is a corrupt_log error naming the event; it never panics.
// The payload may be shared with the event's builder: callers must not modify it.
func Decode(ev Event) (Payload, error) {
	if ev.payload != nil {
		return ev.payload, nil
	}
	p := newPayload(ev.Type, ev.V)
	if p == nil {
		return nil, &Error{Code: CodeCorruptLog, Field: fmt.Sprintf("seq %d", ev.Seq),
			Message: fmt.Sprintf("unknown event type %q version %d", ev.Type, ev.V)}
	}
	dec := json.NewDecoder(bytes.NewReader(ev.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return nil, &Error{Code: CodeCorruptLog, Field: fmt.Sprintf("seq %d", ev.Seq),
			Message: fmt.Sprintf("%s data does not decode", ev.Type), Err: err}
	}
	return p, nil
}

// DecodeAs decodes ev into the payload type T.
func DecodeAs[T Payload](ev Event) (T, error) {
	var zero T
	p, err := Decode(ev)
	if err != nil {
		return zero, err
	}
	t, ok := p.(T)
	if !ok {
		return zero, &Error{Code: CodeCorruptLog, Field: fmt.Sprintf("seq %d", ev.Seq),
			Message: fmt.Sprintf("event is %s, expected %s", ev.Type, zero.EventType())}
	}
	return t, nil
}

// newPayload is the decoder table: one entry for every (type, version) turnlog has
// ever written. Old versions stay here for as long as fixtures carry them.
func newPayload(typ string, v int) Payload {
	switch {
	case typ == TypeSessionCreated && v == 1:
		return &SessionCreated{}
	case typ == TypeSessionBranched && v == 1:
		return &SessionBranched{}
	case typ == TypeTurnStarted && v == 1:
		return &TurnStarted{}
	case typ == TypeModelCalled && v == 1:
		return &ModelCalled{}
	case typ == TypeToolScheduled && v == 1:
		return &ToolScheduled{}
	case typ == TypeToolResulted && v == 1:
		return &ToolResulted{}
	case typ == TypeFilesChanged && v == 1:
		return &FilesChanged{}
	case typ == TypeWorkspaceReverted && v == 1:
		return &WorkspaceReverted{}
	case typ == TypeApprovalRequested && v == 1:
		return &ApprovalRequested{}
	case typ == TypeApprovalResolved && v == 1:
		return &ApprovalResolved{}
	case typ == TypeReviewRequested && v == 1:
		return &ReviewRequested{}
	case typ == TypeReviewResolved && v == 1:
		return &ReviewResolved{}
	case typ == TypePolicyDecided && v == 1:
		return &PolicyDecided{}
	case typ == TypeHandoffOccurred && v == 1:
		return &HandoffOccurred{}
	case typ == TypeContextCompacted && v == 1:
		return &ContextCompacted{}
	case typ == TypeSkillLoaded && v == 1:
		return &SkillLoaded{}
	case typ == TypeTurnSuspended && v == 1:
		return &TurnSuspended{}
	case typ == TypeTurnResumed && v == 1:
		return &TurnResumed{}
	case typ == TypeGuardrailChecked && v == 1:
		return &GuardrailChecked{}
	case typ == TypeGuardrailTripped && v == 1:
		return &GuardrailTripped{}
	case typ == TypeLoopDetected && v == 1:
		return &LoopDetected{}
	case typ == TypeTurnCommitted && v == 1:
		return &TurnCommitted{}
	case typ == TypeTurnFailed && v == 1:
		return &TurnFailed{}
	case typ == TypeTurnCanceled && v == 1:
		return &TurnCanceled{}
	case typ == TypeTurnRecovered && v == 1:
		return &TurnRecovered{}
	case typ == TypeAnswerWithoutEvidence && v == 1:
		return &AnswerWithoutEvidence{}
	case typ == TypeBudgetReached && v == 1:
		return &BudgetReached{}
	case typ == TypeBudgetResolved && v == 1:
		return &BudgetResolved{}
	case typ == TypeEvalRunStarted && v == 1:
		return &EvalRunStarted{}
	case typ == TypeEvalCaseRun && v == 1:
		return &EvalCaseRun{}
	case typ == TypeEvalRunEnded && v == 1:
		return &EvalRunEnded{}
	case typ == TypeEvalJudged && v == 1:
		return &EvalJudged{}
	case typ == TypeGrantGiven && v == 1:
		return &GrantGiven{}
	case typ == TypeGrantRevoked && v == 1:
		return &GrantRevoked{}
	case typ == TypeInputQueued && v == 1:
		return &InputQueued{}
	case typ == TypeQueuedInputDropped && v == 1:
		return &QueuedInputDropped{}
	}
	return nil
}

// Known reports whether the decoder table has an entry for (typ, v).
func Known(typ string, v int) bool { return newPayload(typ, v) != nil }

// Types lists every event type name the decoder table knows, for documentation tests.
func Types() []string {
	return []string{TypeSessionCreated, TypeSessionBranched, TypeTurnStarted, TypeModelCalled, TypeToolScheduled,
		TypeToolResulted, TypeFilesChanged, TypeWorkspaceReverted, TypeApprovalRequested, TypeApprovalResolved, TypeReviewRequested, TypeReviewResolved,
		TypeTurnSuspended, TypeTurnResumed, TypeGuardrailChecked, TypeGuardrailTripped, TypeLoopDetected, TypeAnswerWithoutEvidence, TypeHandoffOccurred, TypePolicyDecided, TypeContextCompacted, TypeSkillLoaded, TypeTurnCommitted, TypeTurnFailed, TypeTurnCanceled, TypeTurnRecovered,
		TypeBudgetReached, TypeBudgetResolved, TypeEvalRunStarted, TypeEvalCaseRun, TypeEvalJudged, TypeEvalRunEnded, TypeInputQueued, TypeQueuedInputDropped, TypeGrantGiven, TypeGrantRevoked}
}
