-- Eval results: every run of an eval case (EvalCaseRun, in its eval run's own log),
-- with the session it ran in, whether it passed and why not, and what it spent.
CREATE TABLE IF NOT EXISTS proj_eval_results (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  run_id TEXT NOT NULL,
  suite TEXT NOT NULL,
  case_name TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  case_session TEXT NOT NULL,
  passed INTEGER NOT NULL,
  failures TEXT,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cost REAL NOT NULL DEFAULT 0,
  took_ms INTEGER NOT NULL DEFAULT 0,
  at TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS proj_eval_results_run ON proj_eval_results (run_id, case_name, attempt);
DROP VIEW IF EXISTS eval_results;
CREATE VIEW eval_results AS
SELECT run_id, suite, case_name, attempt, case_session AS session_id, passed, failures,
       input_tokens, output_tokens, cost, took_ms, at, session_id AS log_session_id
FROM proj_eval_results;
