package events

const (
	TypeEvalRunStarted = "EvalRunStarted"
	TypeEvalCaseRun    = "EvalCaseRun"
	TypeEvalRunEnded   = "EvalRunEnded"
)

// EvalRunStarted opens an eval run's own log (a session of its suite's app, owned by
// "eval", whose SessionCreated's metadata names the run): which suite, how many cases
// and runs.
type EvalRunStarted struct {
	Run   string `json:"run"`
	Suite string `json:"suite"`
	Cases int    `json:"cases"`
	Runs  int    `json:"runs"`
}

func (*EvalRunStarted) EventType() string  { return TypeEvalRunStarted }
func (*EvalRunStarted) SchemaVersion() int { return 1 }

// EvalCaseRun records one run of a case: the session it ran in, whether it passed and
// why not, and what it spent. Path eval/<case>/<attempt>.
type EvalCaseRun struct {
	Run      string   `json:"run"`
	Suite    string   `json:"suite"`
	Case     string   `json:"case"`
	Attempt  int      `json:"attempt"`
	Session  string   `json:"session_id"`
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures,omitempty"`
	Usage    Usage    `json:"usage"`
	Cost     float64  `json:"cost,omitempty"`
	TookMS   int64    `json:"took_ms"`
}

func (*EvalCaseRun) EventType() string  { return TypeEvalCaseRun }
func (*EvalCaseRun) SchemaVersion() int { return 1 }

// EvalRunEnded closes an eval run's log: whether every case reached its pass rate.
type EvalRunEnded struct {
	Run    string `json:"run"`
	Passed bool   `json:"passed"`
}

func (*EvalRunEnded) EventType() string  { return TypeEvalRunEnded }
func (*EvalRunEnded) SchemaVersion() int { return 1 }
