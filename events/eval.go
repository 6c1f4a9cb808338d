package events

const (
	TypeEvalRunStarted = "EvalRunStarted"
	TypeEvalCaseRun    = "EvalCaseRun"
	TypeEvalRunEnded   = "EvalRunEnded"
	TypeEvalJudged     = "EvalJudged"
)

// EvalRunStarted opens an eval run's own log (a session of its suite's app, owned by
// "eval", whose SessionCreated's metadata names the run): which suite, how many cases
// and runs.
type EvalRunStarted struct {
	Run   string `json:"run"`
	Suite string `json:"suite"`
	Cases int    `json:"cases"`
	Runs  int    `json:"runs"`
	// ReplayOf is the run whose recordings this one checks again, calling no model
	// but a judge's where it may ("": the cases ran).
	ReplayOf string `json:"replay_of,omitempty"`
}

func (*EvalRunStarted) EventType() string  { return TypeEvalRunStarted }
func (*EvalRunStarted) SchemaVersion() int { return 1 }

// EvalCaseRun records one run of a case: the session it ran in, whether it passed and
// why not, the judged checks that wait for a judge, and what it spent. Path
// eval/<case>/<attempt>.
type EvalCaseRun struct {
	Run      string   `json:"run"`
	Suite    string   `json:"suite"`
	Case     string   `json:"case"`
	Attempt  int      `json:"attempt"`
	Session  string   `json:"session_id"`
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures,omitempty"`
	// NeedsJudge are the judged checks no judgment answers: their rubric changed
	// since the recording, and this run may call no judge.
	NeedsJudge []string `json:"needs_judge,omitempty"`
	Usage      Usage    `json:"usage"`
	Cost       float64  `json:"cost,omitempty"`
	TookMS     int64    `json:"took_ms"`
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

// EvalJudged is a judged check's verdict on one run of a case: the judge (an llm of
// the suite's app), the rubric, the request it was sent (RequestHash over the llm, its
// instructions and the message), its answer and whether that passes. It is recorded
// like a model call: a later run of the checks on the same recording takes the
// verdict from here while the request is the same (Recorded: so taken, no call).
// Path eval/<case>/<attempt>/judge/<check>.
type EvalJudged struct {
	Run         string  `json:"run"`
	Case        string  `json:"case"`
	Attempt     int     `json:"attempt"`
	Check       int     `json:"check"` // the check's index in the case's expect
	Session     string  `json:"session_id"`
	LLM         string  `json:"llm"`
	Rubric      string  `json:"rubric"`
	RequestHash string  `json:"request_hash"`
	Message     string  `json:"message"` // what the judge was asked about: the inputs and the answer
	Verdict     string  `json:"verdict"` // the judge's answer
	Passed      bool    `json:"passed"`
	Usage       Usage   `json:"usage"`
	Cost        float64 `json:"cost,omitempty"`
	Recorded    bool    `json:"recorded,omitempty"`
}

func (*EvalJudged) EventType() string  { return TypeEvalJudged }
func (*EvalJudged) SchemaVersion() int { return 1 }
