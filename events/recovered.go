package events

const TypeTurnRecovered = "TurnRecovered"

// TurnRecovered records that a turn's process went away while the turn ran and that
// another run of it took it up (at start-up, or a node whose lease it outlived): the
// attempt it is, and what became of the calls in flight. It is a fact of the log, not
// an activity: a replay appends it where it came and compares nothing against it.
type TurnRecovered struct {
	// Attempt is the run of the turn this is: 2 for the first recovery.
	Attempt int `json:"attempt"`
	// Resent are the paths of calls that were scheduled and have no result, and that
	// may run again: idempotent tools, HTTP tools whose receiver dedupes by key (with
	// the same key), agent tools (driven again; their own activities replay).
	Resent []string `json:"resent,omitempty"`
	// OutcomeUnknown are the paths of calls that were scheduled and have no result and
	// may not run again: the turn fails with tool_outcome_unknown rather than act
	// twice.
	OutcomeUnknown []string `json:"outcome_unknown,omitempty"`
	// Replayed counts the turn's activities whose recorded results the recovery reuses
	// (model calls, tool results, judges' verdicts, compactions, skill loads): none of
	// them happens again.
	Replayed int `json:"replayed"`
}

func (*TurnRecovered) EventType() string  { return TypeTurnRecovered }
func (*TurnRecovered) SchemaVersion() int { return 1 }
