-- Eval results: the judged checks of a run that wait for a judge (a replay whose
-- rubric changed, calling none), and each run's status: passed, failed or needs_judge.
ALTER TABLE proj_eval_results ADD COLUMN needs_judge TEXT;
DROP VIEW IF EXISTS eval_results;
CREATE VIEW eval_results AS
SELECT run_id, suite, case_name, attempt, case_session AS session_id, passed, failures,
       input_tokens, output_tokens, cost, took_ms, at, session_id AS log_session_id, needs_judge,
       CASE WHEN passed THEN 'passed' WHEN failures IS NULL AND needs_judge IS NOT NULL THEN 'needs_judge' ELSE 'failed' END AS status
FROM proj_eval_results;
