package postgres

import (
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/turnlog/turnlog/projection"
)

// A budget check on several nodes must see what other nodes' calls spent for the
// same user that day, without a round trip of its own. The engine follows a running
// session's owner's day (FollowDaySpend); each append of that session then reads the
// day's spend as the last statement of its own pipeline — the same round trip, in its
// transaction, after its own rows — and the check reads what the latest append saw.
// What it cannot see is what other runs are spending at that moment and have not
// recorded: at most one model call of each.

// dayFollow is a followed session's owner's day: which, and its spend by agent as
// the session's latest append read it.
type dayFollow struct {
	day     string
	mu      sync.Mutex
	figures map[string]projection.SpendFigures
	seen    bool
}

// qDaySpendOfSession is the spend of a session's owner in its app on a day, by agent.
const qDaySpendOfSession = `SELECT p.agent, sum(p.calls)::bigint, sum(p.input_tokens)::bigint, sum(p.cached_tokens)::bigint,
	sum(p.output_tokens)::bigint, sum(p.reasoning_tokens)::bigint, sum(p.cost)::double precision
	FROM proj_sessions s JOIN proj_spend p ON p.app = s.app AND p.owner = s.owner AND p.day = $2
	WHERE s.id = $1 GROUP BY p.agent`

// FollowDaySpend has every append of session read its owner's spend on day (see
// above) until stop is called; latest is what the newest append read (false: none
// since following began).
func (s *Store) FollowDaySpend(session, day string) (latest func() (map[string]projection.SpendFigures, bool), stop func()) {
	f := &dayFollow{day: day}
	s.follows.Store(session, f)
	latest = func() (map[string]projection.SpendFigures, bool) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.figures, f.seen
	}
	return latest, func() { s.follows.CompareAndDelete(session, f) }
}

// queueDaySpend adds the day's read to p when its session is followed; the returned
// function publishes what it read, once the append committed.
func (s *Store) queueDaySpend(p *pipeline) func() {
	v, ok := s.follows.Load(p.session)
	if !ok {
		return func() {}
	}
	f := v.(*dayFollow)
	read := map[string]projection.SpendFigures{}
	p.queue("read the day's spend", nil, qDaySpendOfSession, p.session, f.day)
	p.steps[len(p.steps)-1].rows = func(rows pgx.Rows) error {
		for rows.Next() {
			var agent string
			var fig projection.SpendFigures
			u := &fig.Usage
			if err := rows.Scan(&agent, &fig.Calls, &u.InputTokens, &u.CachedTokens, &u.OutputTokens, &u.ReasoningTokens, &fig.Cost); err != nil {
				return err
			}
			read[agent] = fig
		}
		return rows.Err()
	}
	return func() {
		f.mu.Lock()
		f.figures, f.seen = read, true
		f.mu.Unlock()
	}
}

// readRows reads a pipeline step's rows with read.
func readRows(br pgx.BatchResults, read func(pgx.Rows) error) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := read(rows); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}
