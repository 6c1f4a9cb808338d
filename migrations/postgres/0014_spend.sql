-- Spend (as SQLite's 0022): each session's model calls' usage and cost by agent, llm
-- and budget day, and the extensions people gave session and user-day budgets.
CREATE TABLE IF NOT EXISTS proj_spend (
    session_id       text COLLATE "C" NOT NULL,
    app              text COLLATE "C" NOT NULL,
    owner            text COLLATE "C" NOT NULL,
    day              text COLLATE "C" NOT NULL,
    agent            text NOT NULL,
    llm              text NOT NULL,
    calls            bigint NOT NULL DEFAULT 0,
    input_tokens     bigint NOT NULL DEFAULT 0,
    cached_tokens    bigint NOT NULL DEFAULT 0,
    output_tokens    bigint NOT NULL DEFAULT 0,
    reasoning_tokens bigint NOT NULL DEFAULT 0,
    cost             double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, agent, llm, day)
);
CREATE INDEX IF NOT EXISTS proj_spend_by_day ON proj_spend (app, owner, day, agent);
CREATE TABLE IF NOT EXISTS proj_budget_extensions (
    session_id    text COLLATE "C" NOT NULL,
    seq           bigint NOT NULL,
    app           text COLLATE "C" NOT NULL,
    owner         text COLLATE "C" NOT NULL,
    scope         text NOT NULL,
    level         text NOT NULL,
    agent         text NOT NULL,
    day           text COLLATE "C" NOT NULL,
    input_tokens  bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    total_tokens  bigint NOT NULL DEFAULT 0,
    cost          double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS proj_budget_extensions_by_day ON proj_budget_extensions (app, owner, day) WHERE scope = 'user_day';
INSERT INTO proj_spend (session_id, app, owner, day, agent, llm, calls, input_tokens, cached_tokens, output_tokens, reasoning_tokens, cost)
SELECT e.session_id, s.app, s.owner, coalesce(e.data ->> 'day', left(e.at, 10)), e.data ->> 'agent', e.data ->> 'llm', count(*),
       sum(coalesce((e.data -> 'usage' ->> 'input_tokens')::bigint, 0)), sum(coalesce((e.data -> 'usage' ->> 'cached_tokens')::bigint, 0)),
       sum(coalesce((e.data -> 'usage' ->> 'output_tokens')::bigint, 0)), sum(coalesce((e.data -> 'usage' ->> 'reasoning_tokens')::bigint, 0)),
       sum(coalesce((e.data ->> 'cost')::double precision, 0))
FROM events e JOIN proj_sessions s ON s.id = e.session_id
WHERE e.type IN ('ModelCalled', 'ContextCompacted') AND e.data ->> 'agent' IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6
ON CONFLICT DO NOTHING;
DROP VIEW IF EXISTS spend;
CREATE VIEW spend AS
SELECT session_id, app, owner, day, agent, llm, calls, input_tokens, cached_tokens, output_tokens, reasoning_tokens,
       input_tokens + output_tokens AS total_tokens, cost
FROM proj_spend;
