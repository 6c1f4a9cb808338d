-- Spend: what each session's model calls spent, by agent, llm and budget day (the
-- usage and cost of its ModelCalled and ContextCompacted events; the day a call recorded, else the UTC day
-- of its time), and the extensions people gave session and user-day budgets. Budget
-- checks read them when a turn's run begins; the spend view shows them. Existing calls
-- are counted from their events here, except those kept as a blob (over 64 KiB), which
-- count once a rebuild (turnlog rebuild) folds every event.
CREATE TABLE IF NOT EXISTS proj_spend (
  session_id TEXT NOT NULL,
  app TEXT NOT NULL,
  owner TEXT NOT NULL,
  day TEXT NOT NULL,
  agent TEXT NOT NULL,
  llm TEXT NOT NULL,
  calls INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  cached_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  reasoning_tokens INTEGER NOT NULL DEFAULT 0,
  cost REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (session_id, agent, llm, day)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS proj_spend_by_day ON proj_spend (app, owner, day, agent);
CREATE TABLE IF NOT EXISTS proj_budget_extensions (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  app TEXT NOT NULL,
  owner TEXT NOT NULL,
  scope TEXT NOT NULL,
  level TEXT NOT NULL,
  agent TEXT NOT NULL,
  day TEXT NOT NULL,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  total_tokens INTEGER NOT NULL DEFAULT 0,
  cost REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS proj_budget_extensions_by_day ON proj_budget_extensions (app, owner, day) WHERE scope = 'user_day';
INSERT INTO proj_spend (session_id, app, owner, day, agent, llm, calls, input_tokens, cached_tokens, output_tokens, reasoning_tokens, cost)
SELECT e.session_id, s.app, s.owner, coalesce(e.data ->> '$.day', substr(e.at, 1, 10)), e.data ->> '$.agent', e.data ->> '$.llm', count(*),
       sum(coalesce(e.data ->> '$.usage.input_tokens', 0)), sum(coalesce(e.data ->> '$.usage.cached_tokens', 0)),
       sum(coalesce(e.data ->> '$.usage.output_tokens', 0)), sum(coalesce(e.data ->> '$.usage.reasoning_tokens', 0)),
       sum(coalesce(e.data ->> '$.cost', 0))
FROM events e JOIN proj_sessions s ON s.id = e.session_id
WHERE e.type IN ('ModelCalled', 'ContextCompacted') AND e.data ->> '$.agent' IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6
ON CONFLICT DO NOTHING;
DROP VIEW IF EXISTS spend;
CREATE VIEW spend AS
SELECT session_id, app, owner, day, agent, llm, calls, input_tokens, cached_tokens, output_tokens, reasoning_tokens,
       input_tokens + output_tokens AS total_tokens, cost
FROM proj_spend;
