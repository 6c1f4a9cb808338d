-- turnlog's schema on PostgreSQL: the same log, read models and views as on SQLite.
-- Times are stored as text in RFC 3339 with nanoseconds, as on SQLite, so both stores
-- give back the very times they were given; the views show them as timestamptz. Text
-- that is ordered or compared as a range (ids, times, keys) uses the C collation, so
-- it orders by bytes whatever the database's locale.

CREATE TABLE blobs (
    hash text PRIMARY KEY,              -- "sha256:<hex>" of data
    size integer NOT NULL CHECK (size >= 0),
    data bytea NOT NULL
);

CREATE TABLE events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id text COLLATE "C"    NOT NULL CHECK (session_id <> ''),
    seq        bigint  NOT NULL CHECK (seq > 0),
    turn_id    text    NOT NULL DEFAULT '',
    type       text    NOT NULL CHECK (type <> ''),
    path       text    NOT NULL DEFAULT '',
    v          integer NOT NULL CHECK (v > 0),
    data       json    NOT NULL,        -- json keeps the canonical bytes as written
    blob_hash  text REFERENCES blobs (hash),
    at         text COLLATE "C"    NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE INDEX events_blob ON events (blob_hash) WHERE blob_hash IS NOT NULL;

-- Erasure is the one way events and blobs leave: a DELETE passes only inside a
-- transaction that names the session in erasing (and empties it before it commits).
CREATE TABLE erasing (
    session_id text COLLATE "C" PRIMARY KEY
);

CREATE FUNCTION turnlog_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% are append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'integrity_constraint_violation';
END $$;

CREATE FUNCTION turnlog_events_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM erasing WHERE session_id = OLD.session_id) THEN
        RAISE EXCEPTION 'events are append-only: DELETE refused' USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
END $$;

CREATE FUNCTION turnlog_blobs_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM erasing)
       OR EXISTS (SELECT 1 FROM events WHERE blob_hash = OLD.hash AND session_id NOT IN (SELECT session_id FROM erasing)) THEN
        RAISE EXCEPTION 'blobs are append-only: DELETE refused' USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
END $$;

CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events FOR EACH ROW EXECUTE FUNCTION turnlog_refuse();
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events FOR EACH ROW EXECUTE FUNCTION turnlog_events_delete();
CREATE TRIGGER events_append_only_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION turnlog_refuse();
CREATE TRIGGER blobs_append_only_update BEFORE UPDATE ON blobs FOR EACH ROW EXECUTE FUNCTION turnlog_refuse();
CREATE TRIGGER blobs_append_only_delete BEFORE DELETE ON blobs FOR EACH ROW EXECUTE FUNCTION turnlog_blobs_delete();
CREATE TRIGGER blobs_append_only_truncate BEFORE TRUNCATE ON blobs FOR EACH STATEMENT EXECUTE FUNCTION turnlog_refuse();

-- Projections: read models folded from events, dropped and refolded by rebuild.
CREATE TABLE proj_sessions (
    id              text COLLATE "C" PRIMARY KEY,
    app             text    NOT NULL,
    owner           text    NOT NULL,
    metadata        json,
    created_at      text COLLATE "C"    NOT NULL,
    created_seq     bigint  NOT NULL,
    active_agent    text    NOT NULL,
    turn_count      integer NOT NULL DEFAULT 0,
    last_commit_seq bigint  NOT NULL DEFAULT 0,
    parent_id       text,
    parent_seq      bigint,
    parent_turn     text
);
CREATE INDEX proj_sessions_owner ON proj_sessions (owner, created_at DESC, id DESC);
CREATE INDEX proj_sessions_parent ON proj_sessions (parent_id, parent_seq) WHERE parent_id IS NOT NULL;
CREATE INDEX proj_sessions_app ON proj_sessions (app, id);

CREATE TABLE proj_turns (
    session_id    text    NOT NULL,
    turn_id       text    NOT NULL,
    start_seq     bigint  NOT NULL,
    end_seq       bigint,
    status        text    NOT NULL CHECK (status IN ('running', 'suspended', 'committed', 'failed', 'canceled')),
    input         text    NOT NULL,
    agent         text    NOT NULL,
    started_at    text    NOT NULL,
    ended_at      text,
    model_calls   integer NOT NULL DEFAULT 0,
    tool_calls    integer NOT NULL DEFAULT 0,
    input_tokens  bigint  NOT NULL DEFAULT 0,
    output_tokens bigint  NOT NULL DEFAULT 0,
    error_code    text,
    error_message text,
    end_agent     text,
    agents        jsonb   NOT NULL DEFAULT '[]',
    PRIMARY KEY (session_id, turn_id)
);
CREATE INDEX proj_turns_end ON proj_turns (session_id, end_seq);
CREATE INDEX proj_turns_start ON proj_turns (session_id, start_seq);
CREATE INDEX proj_turns_running ON proj_turns (session_id, start_seq) WHERE status = 'running';
CREATE INDEX proj_turns_suspended ON proj_turns (session_id, start_seq) WHERE status = 'suspended';

CREATE TABLE proj_history (
    session_id text   NOT NULL,
    seq        bigint NOT NULL,         -- seq of the TurnCommitted that added the item
    idx        integer NOT NULL,        -- position within that commit
    turn_id    text   NOT NULL,
    item       json   NOT NULL,
    PRIMARY KEY (session_id, seq, idx)
);

CREATE TABLE proj_interrupts (
    session_id       text   NOT NULL,
    interrupt_id     text   NOT NULL,
    turn_id          text   NOT NULL,
    kind             text   NOT NULL,
    path             text   NOT NULL,
    call_id          text,
    tool             text,
    arguments        json,
    reason           text,
    status           text   NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'closed')),
    requested_seq    bigint NOT NULL,
    requested_at     text   NOT NULL,
    resolved_seq     bigint,
    resolved_at      text,
    policy           json,
    answered_by      text,
    edited_arguments json,
    PRIMARY KEY (session_id, interrupt_id)
);
CREATE INDEX proj_interrupts_pending ON proj_interrupts (session_id, requested_seq) WHERE status = 'pending';

CREATE TABLE proj_queue (
    session_id text   NOT NULL,
    turn_id    text   NOT NULL,
    input      text   NOT NULL,
    by_user    text   NOT NULL,
    status     text   NOT NULL CHECK (status IN ('queued', 'started', 'dropped')),
    queued_seq bigint NOT NULL,
    queued_at  text   NOT NULL,
    ended_seq  bigint,
    PRIMARY KEY (session_id, turn_id)
);
CREATE INDEX proj_queue_waiting ON proj_queue (session_id, queued_seq) WHERE status = 'queued';

-- Agents' memories, searched with PostgreSQL's own full-text search.
CREATE TABLE memories (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app        text NOT NULL,
    owner      text NOT NULL,
    key        text COLLATE "C" NOT NULL,            -- session/turn/path of the memory_save call
    label      text NOT NULL DEFAULT '',
    text       text NOT NULL,
    created_at text NOT NULL,
    vector     bytea,                    -- float32 little-endian, when an embeddings provider is set
    words      tsvector GENERATED ALWAYS AS (to_tsvector('english', label || ' ' || text)) STORED
);
CREATE UNIQUE INDEX memories_key ON memories (app, owner, key);
CREATE INDEX memories_owner ON memories (app, owner, id);
CREATE INDEX memories_words ON memories USING gin (words);

CREATE TABLE idempotency_keys (
    owner      text   NOT NULL,
    key        text   NOT NULL,
    route      text   NOT NULL,
    body_hash  text   NOT NULL,
    session_id text   NOT NULL DEFAULT '',
    turn_id    text   NOT NULL DEFAULT '',
    start_seq  bigint NOT NULL DEFAULT 0,
    created_at text   NOT NULL,
    expires_at text COLLATE "C"   NOT NULL,
    PRIMARY KEY (owner, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
CREATE INDEX idempotency_keys_session ON idempotency_keys (session_id);

CREATE TABLE webhook_outbox (
    delivery_id  text COLLATE "C"    PRIMARY KEY,
    app          text    NOT NULL,
    webhook      text    NOT NULL,
    event        text    NOT NULL CHECK (event IN ('turn.committed', 'turn.failed', 'turn.suspended', 'turn.canceled')),
    session_id   text    NOT NULL,
    seq          bigint  NOT NULL,
    turn_id      text    NOT NULL,
    status       text    NOT NULL CHECK (status IN ('pending', 'sending', 'delivered', 'dead')),
    attempts     integer NOT NULL DEFAULT 0,
    next_at_ms   bigint  NOT NULL,
    created_at   text COLLATE "C"    NOT NULL,
    delivered_at text,
    last_status  integer,
    last_error   text
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_at_ms) WHERE status IN ('pending', 'sending');
CREATE INDEX webhook_outbox_listing ON webhook_outbox (created_at, delivery_id);
CREATE INDEX webhook_outbox_session ON webhook_outbox (session_id);

CREATE TABLE ui_sessions (
    id_hash    text    PRIMARY KEY,
    user_name  text    NOT NULL,
    admin      integer NOT NULL CHECK (admin IN (0, 1)),
    csrf       text    NOT NULL,
    created_at text    NOT NULL,
    expires_at text COLLATE "C"    NOT NULL,
    revoked_at text,
    key_hash   text    NOT NULL DEFAULT ''
);
CREATE INDEX ui_sessions_expiry ON ui_sessions (expires_at);

CREATE TABLE erasures (
    id       text COLLATE "C" PRIMARY KEY,
    kind     text NOT NULL CHECK (kind IN ('session', 'user', 'retention')),
    subject  text NOT NULL,
    by_user  text NOT NULL,
    at       text COLLATE "C" NOT NULL,
    sessions json NOT NULL,
    counts   json NOT NULL
);
CREATE INDEX erasures_at ON erasures (at, id);

-- turnlog_json is text as JSON, or NULL when it is not JSON (a tool's output).
CREATE FUNCTION turnlog_json(t text) RETURNS json LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN t::json;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;

-- Views for people reading a session with psql, as with sqlite3.
CREATE VIEW sessions AS
SELECT id, app, owner, metadata, created_at::timestamptz AS created_at, active_agent, turn_count, last_commit_seq, parent_id, parent_seq, parent_turn
FROM proj_sessions;

CREATE VIEW turns AS
SELECT session_id, turn_id, status, agent, input, start_seq, end_seq, started_at::timestamptz AS started_at, ended_at::timestamptz AS ended_at,
       (extract(epoch FROM ended_at::timestamptz - started_at::timestamptz) * 1000)::bigint AS duration_ms,
       model_calls, tool_calls, input_tokens, output_tokens, error_code, error_message, agents
FROM proj_turns;

CREATE VIEW history AS
WITH RECURSIVE lineage (session_id, ancestor, upto, depth) AS (
    SELECT id, id, NULL::bigint, 0 FROM proj_sessions
    UNION ALL
    SELECT l.session_id, s.parent_id, s.parent_seq, l.depth + 1
    FROM lineage l JOIN proj_sessions s ON s.id = l.ancestor
    WHERE s.parent_id IS NOT NULL
)
SELECT l.session_id, h.session_id AS from_session, h.seq, h.idx, h.turn_id,
       h.item ->> 'type' AS type,
       h.item ->> 'role' AS role,
       h.item ->> 'agent' AS agent,
       h.item ->> 'content' AS content,
       h.item ->> 'call_id' AS call_id,
       h.item ->> 'name' AS name,
       coalesce(i.edited_arguments::text, h.item ->> 'arguments') AS arguments,
       h.item ->> 'output' AS output,
       i.answered_by AS edited_by,
       CASE WHEN i.edited_arguments IS NULL THEN NULL ELSE h.item ->> 'arguments' END AS proposed_arguments
FROM lineage l JOIN proj_history h ON h.session_id = l.ancestor AND (l.upto IS NULL OR h.seq <= l.upto)
LEFT JOIN proj_interrupts i ON h.item ->> 'type' = 'function_call' AND i.session_id = h.session_id AND i.turn_id = h.turn_id
     AND i.path = (h.item ->> 'agent') || '/tool/' || (h.item ->> 'call_id') || '/approval' AND i.edited_arguments IS NOT NULL
ORDER BY l.session_id, l.depth DESC, h.seq, h.idx;

CREATE VIEW pending_interrupts AS
SELECT session_id, turn_id, interrupt_id, kind, path, tool, arguments, reason,
       policy ->> 'rule' AS rule, nullif(policy ->> 'level', '') AS level, requested_at::timestamptz AS requested_at
FROM proj_interrupts WHERE status = 'pending';

CREATE VIEW branch_points AS
SELECT t.session_id, t.turn_id, t.end_seq AS seq, t.ended_at::timestamptz AS committed_at, t.end_agent AS agent,
       (SELECT coalesce(json_agg(s.id ORDER BY s.id), '[]'::json) FROM proj_sessions s
        WHERE s.parent_id = t.session_id AND s.parent_seq = t.end_seq) AS branches
FROM proj_turns t WHERE t.status = 'committed';

CREATE VIEW queue AS
SELECT session_id, turn_id, input, by_user, queued_at::timestamptz AS queued_at FROM proj_queue WHERE status = 'queued';

CREATE VIEW webhook_deliveries AS
SELECT delivery_id, app, webhook, event, session_id, turn_id, seq, status, attempts,
       CASE WHEN status IN ('pending', 'sending') THEN to_timestamp(next_at_ms / 1000.0) END AS next_at,
       created_at::timestamptz AS created_at, delivered_at::timestamptz AS delivered_at, last_status, last_error
FROM webhook_outbox;

-- The audit trail: what was decided about tools, and what they did.
CREATE VIEW audit AS
WITH asked AS (
    SELECT e.session_id, e.turn_id, e.path, e.seq, e.type, e.data FROM events e WHERE e.type IN ('ApprovalRequested', 'ReviewRequested')
)
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path,
       CASE e.type WHEN 'PolicyDecided' THEN 'decision' WHEN 'ContextCompacted' THEN 'compaction' WHEN 'SkillLoaded' THEN 'skill' ELSE 'result' END AS kind,
       CASE e.type WHEN 'ContextCompacted' THEN NULL WHEN 'SkillLoaded' THEN 'load_skill' ELSE e.data ->> 'tool' END AS tool,
       CASE e.type
         WHEN 'PolicyDecided' THEN e.data ->> 'decision'
         WHEN 'ContextCompacted' THEN 'summarised ' || (e.data ->> 'covers') || ' items'
         WHEN 'SkillLoaded' THEN e.data ->> 'name'
         ELSE CASE WHEN (e.data ->> 'is_error')::boolean THEN coalesce(e.data ->> 'error_kind', 'error') ELSE 'ok' END
       END AS outcome,
       CASE WHEN e.type = 'PolicyDecided' THEN (e.data ->> 'level') || ' ' || (e.data ->> 'rule') END AS rule,
       CASE e.type
         WHEN 'PolicyDecided' THEN e.data ->> 'reason'
         WHEN 'ContextCompacted' THEN 'agent ' || (e.data ->> 'agent') || ', items ' || (e.data ->> 'from') || '–' || (e.data ->> 'covers')
                                      || ', ' || (e.data ->> 'tokens_before') || ' → ' || (e.data ->> 'tokens_after') || ' tokens'
         WHEN 'SkillLoaded' THEN e.data ->> 'path'
       END AS reason,
       CASE WHEN e.type = 'PolicyDecided' THEN (e.data -> 'resources')::text END AS resources,
       CASE WHEN e.type = 'ToolResulted' THEN turnlog_json(e.data ->> 'output') ->> 'exit_code' END AS exit_code,
       CASE WHEN e.type = 'ToolResulted' THEN turnlog_json(e.data ->> 'output') ->> 'diff' END AS diff,
       NULL AS answered_by, NULL AS proposed, NULL AS approved
FROM events e
WHERE e.type IN ('PolicyDecided', 'ContextCompacted', 'SkillLoaded', 'ToolResulted')
UNION ALL
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, 'approval' AS kind,
       q.data ->> 'tool' AS tool,
       CASE WHEN e.data ->> 'by' = 'turnlog' AND NOT (e.data ->> 'confirmed')::boolean THEN 'expired'
            WHEN (e.data ->> 'confirmed')::boolean AND e.data -> 'arguments' IS NOT NULL
                 AND (e.data -> 'arguments')::jsonb IS DISTINCT FROM (q.data -> 'arguments')::jsonb THEN 'edited'
            WHEN (e.data ->> 'confirmed')::boolean THEN 'approved' ELSE 'rejected' END AS outcome,
       q.data ->> 'rule' AS rule,
       e.data ->> 'rejection_message' AS reason, NULL, NULL, NULL,
       e.data ->> 'by' AS answered_by,
       (q.data -> 'arguments')::text AS proposed,
       CASE WHEN (e.data ->> 'confirmed')::boolean THEN coalesce(e.data -> 'arguments', q.data -> 'arguments')::text END AS approved
FROM events e LEFT JOIN LATERAL (
    SELECT a.data FROM asked a WHERE a.session_id = e.session_id AND a.turn_id = e.turn_id AND a.path = e.path
      AND a.type = 'ApprovalRequested' AND a.seq < e.seq ORDER BY a.seq DESC LIMIT 1) q ON true
WHERE e.type = 'ApprovalResolved'
UNION ALL
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, 'review' AS kind, NULL AS tool,
       CASE WHEN e.data ->> 'decision' = 'approve' THEN 'approved' ELSE 'rejected' END AS outcome,
       q.data ->> 'rule' AS rule,
       e.data ->> 'reviewer_notes' AS reason, NULL, NULL, NULL,
       e.data ->> 'by' AS answered_by, NULL AS proposed, NULL AS approved
FROM events e LEFT JOIN LATERAL (
    SELECT a.data FROM asked a WHERE a.session_id = e.session_id AND a.turn_id = e.turn_id AND a.path = e.path
      AND a.type = 'ReviewRequested' AND a.seq < e.seq ORDER BY a.seq DESC LIMIT 1) q ON true
WHERE e.type = 'ReviewResolved'
UNION ALL
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, 'guardrail' AS kind, NULL AS tool,
       CASE WHEN e.data ->> 'kind' = 'policy' THEN 'blocked' ELSE 'tripped' END AS outcome, e.data ->> 'name' AS rule,
       coalesce(e.data ->> 'stage', '') || ': ' || coalesce(e.data ->> 'reason', '') AS reason, NULL, NULL, NULL, NULL, NULL, NULL
FROM events e WHERE e.type = 'GuardrailTripped'
UNION ALL
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, 'policy' AS kind,
       CASE WHEN e.type = 'ToolResulted' THEN e.data ->> 'tool' END AS tool,
       CASE WHEN m.value ->> 'action' = 'redact' THEN 'redacted' ELSE 'logged' END AS outcome, m.value ->> 'rule' AS rule,
       coalesce(m.value ->> 'target', '') || ': ' || coalesce(m.value ->> 'matches', '0') || ' match(es)' AS reason, NULL, NULL, NULL, NULL, NULL, NULL
FROM events e CROSS JOIN LATERAL json_array_elements(CASE WHEN json_typeof(e.data -> 'policy') = 'array' THEN e.data -> 'policy' ELSE '[]'::json END) AS m(value)
WHERE e.type IN ('TurnStarted', 'ModelCalled', 'ToolResulted');
