-- Eval results (as SQLite's 0023): every run of an eval case, from its eval run's log.
CREATE TABLE IF NOT EXISTS proj_eval_results (
    session_id    text COLLATE "C" NOT NULL,
    seq           bigint NOT NULL,
    run_id        text COLLATE "C" NOT NULL,
    suite         text NOT NULL,
    case_name     text NOT NULL,
    attempt       integer NOT NULL,
    case_session  text NOT NULL,
    passed        boolean NOT NULL,
    failures      json,
    input_tokens  bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cost          double precision NOT NULL DEFAULT 0,
    took_ms       bigint NOT NULL DEFAULT 0,
    at            text COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS proj_eval_results_run ON proj_eval_results (run_id, case_name, attempt);
DROP VIEW IF EXISTS eval_results;
CREATE VIEW eval_results AS
SELECT run_id, suite, case_name, attempt, case_session AS session_id, passed, failures,
       input_tokens, output_tokens, cost, took_ms, at::timestamptz AS at, session_id AS log_session_id
FROM proj_eval_results;
