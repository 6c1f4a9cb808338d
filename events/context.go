package events

const TypeContextCompacted = "ContextCompacted"

// ItemContextSummary is a conversation item that stands, in model requests, for the
// first Covers items of the conversation: a compaction's summary. History keeps the
// items it covers; only requests leave them out.
const ItemContextSummary = "context_summary"

// SummarySections are a compaction summary's sections, in order. Every summary has
// all of them.
var SummarySections = []string{"Goal", "Constraints", "Progress", "Decisions", "Files and Symbols",
	"Tool Evidence", "Open Questions", "Remaining Work", "Risks"}

// SummarySection is one section of a compaction summary.
type SummarySection struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// ContextCompacted records a compaction: a model call (the agent's, or its
// summariser's) that summarised the first Covers items of the conversation, so later
// requests carry the summary instead of them. Path `<agent>/compact/<n>`. It is the
// recorded activity: a replay reuses it and calls no model. The items themselves stay
// in the log and the history.
type ContextCompacted struct {
	Agent       string `json:"agent"`
	LLM         string `json:"llm"`
	RequestHash string `json:"request_hash"` // of the summarising request
	// From is where the items this compaction read start (the previous summary covers
	// those before it); Covers is how many items the summary stands for, from the first.
	From     int              `json:"from"`
	Covers   int              `json:"covers"`
	Sections []SummarySection `json:"sections"`
	// Identifiers are the paths, URLs, hashes, ids and error codes found in the
	// compacted items, each of which the summary holds verbatim.
	Identifiers  []string `json:"identifiers,omitempty"`
	TokensBefore int      `json:"tokens_before"` // what the request needed, over the window
	TokensAfter  int      `json:"tokens_after"`  // what it holds with the summary (within the window)
	Usage        Usage    `json:"usage"`
	// Cost and Day are as a ModelCalled's: what the summarising call cost by the
	// price table, and the budget day it counts to (absent: the UTC day of its time).
	Cost float64 `json:"cost,omitempty"`
	Day  string  `json:"day,omitempty"`
}

func (*ContextCompacted) EventType() string  { return TypeContextCompacted }
func (*ContextCompacted) SchemaVersion() int { return 1 }
