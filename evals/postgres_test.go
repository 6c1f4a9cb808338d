package evals_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/evals"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// TestEvalsRunOnPostgres: on PostgreSQL a suite runs and replays as on SQLite — its
// runs and verdicts in the run's own log, folded into the eval_results view with
// each run's status — and an earlier run's report is read back from the log.
func TestEvalsRunOnPostgres(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: dsn, ConfigData: demo.Config, Functions: demo.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	live, err := (&evals.Runner{Engine: tl.Engine, Log: tl.Store, RunID: "pg-live", Record: true}).Run(ctx, demoSuite(t))
	if err != nil || !live.Passed {
		t.Fatalf("the demo suite on PostgreSQL: %v", err)
	}
	waiting, err := (&evals.Runner{Engine: tl.Engine, Log: tl.Store, RunID: "pg-waiting", Replay: live.Recording()}).Run(ctx,
		demoSuite(t, "and guesses nothing.", "and names no refund."))
	if err != nil || waiting.Passed {
		t.Fatalf("a changed rubric replayed on PostgreSQL: %v", err)
	}
	conn, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT run_id, status, count(*) FROM eval_results GROUP BY run_id, status ORDER BY run_id, status`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var run, status string
		var n int
		if err := rows.Scan(&run, &status, &n); err != nil {
			t.Fatal(err)
		}
		got[run+" "+status] = n
	}
	if len(got) != 3 || got["pg-live passed"] != 14 || got["pg-waiting passed"] != 12 || got["pg-waiting needs_judge"] != 2 {
		t.Fatalf("eval_results on PostgreSQL: %v", got)
	}
	back, err := evals.ReportOf(ctx, tl.Store, "pg-waiting")
	if err != nil || len(back.Cases) != 7 || back.Cases[0].Status != evals.StatusNeedsJudge || back.Cases[0].NeedsJudge != 2 {
		t.Fatalf("the run read back: %+v %v", back, err)
	}
}
