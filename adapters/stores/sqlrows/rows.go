package sqlrows

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

type Scanner interface{ Scan(dest ...any) error }

func ScanEvent(sc Scanner) (events.Event, error) {
	var (
		ev       events.Event
		data, at string
		blobHash sql.NullString
		blob     []byte
	)
	if err := sc.Scan(&ev.Session, &ev.Seq, &ev.Turn, &ev.Type, &ev.Path, &ev.V, &data, &blobHash, &blob, &at); err != nil {
		return ev, err
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return ev, &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("%s/%d.at", ev.Session, ev.Seq), Message: "bad timestamp", Err: err}
	}
	ev.At = t
	if blobHash.Valid {
		if blob == nil {
			return ev, &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("%s/%d", ev.Session, ev.Seq), Message: "blob " + blobHash.String + " is missing"}
		}
		sum := sha256.Sum256(blob)
		if "sha256:"+hex.EncodeToString(sum[:]) != blobHash.String {
			return ev, &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("%s/%d", ev.Session, ev.Seq), Message: "blob " + blobHash.String + " does not match its hash"}
		}
		ev.Data = json.RawMessage(bytes.Clone(blob))
	} else {
		ev.Data = json.RawMessage(data)
	}
	return ev, nil
}

// ScanSession reads a session's columns.
func ScanSession(sc Scanner) (projection.Session, error) {
	return scanSession(sc)
}

// ReadSession reads session id's columns from row. Errors: not_found (no row).
func ReadSession(row Scanner, id string) (projection.Session, error) {
	ss, err := scanSession(row)
	return ss, sessionError(id, err)
}

// ReadSessionHead reads session id's columns followed by its log's newest seq and its
// queue's length (QSessionHeadTail) from row. Errors: not_found (no row).
func ReadSessionHead(row Scanner, id string) (projection.SessionHead, error) {
	var h projection.SessionHead
	ss, err := scanSession(row, &h.LastSeq, &h.Queued)
	h.Session = ss
	return h, sessionError(id, err)
}

// sessionError types the error of reading session id.
func sessionError(id string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return events.Errorf(events.CodeNotFound, "session %s not found", id)
	}
	if err != nil {
		return fmt.Errorf("read session %s: %w", id, err)
	}
	return nil
}

func scanSession(sc Scanner, more ...any) (projection.Session, error) {
	var (
		ss                    projection.Session
		meta, parentID, pturn sql.NullString
		created               string
		parentSeq             sql.NullInt64
	)
	cols := append([]any{&ss.ID, &ss.App, &ss.Owner, &meta, &created, &ss.ActiveAgent, &ss.TurnCount, &ss.LastCommitSeq,
		&parentID, &parentSeq, &pturn}, more...)
	if err := sc.Scan(cols...); err != nil {
		return ss, err
	}
	if meta.Valid {
		ss.Metadata = json.RawMessage(meta.String)
	}
	ss.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	ss.ParentID, ss.ParentSeq, ss.ParentTurn = parentID.String, parentSeq.Int64, pturn.String
	return ss, nil
}

// AsEdited rewrites a function_call item to show the arguments it ran with.
func AsEdited(item []byte, edited, by string) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(item, &fields); err != nil {
		return nil, err
	}
	fields["proposed_arguments"] = fields["arguments"]
	fields["arguments"] = json.RawMessage(edited)
	fields["edited_by"] = events.MustMarshal(by)
	return events.Marshal(fields)
}

// DecodeItem reads one canonical item with gjson, several times faster than
// encoding/json's reflection on long histories.
func DecodeItem(raw []byte) (events.Item, error) {
	// The column is valid JSON by its constraint (json_valid on SQLite, the json type
	// on PostgreSQL): only its shape is checked here.
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return events.Item{}, fmt.Errorf("item is not a JSON object")
	}
	var it events.Item
	var err error
	gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			it.Type = v.Str
		case "role":
			it.Role = v.Str
		case "content":
			it.Content = v.Str
		case "agent":
			it.Agent = v.Str
		case "call_id":
			it.CallID = v.Str
		case "name":
			it.Name = v.Str
		case "output":
			it.Output = v.Str
		case "arguments":
			it.Arguments = json.RawMessage(v.Raw)
		case "covers":
			it.Covers = int(v.Int())
		default:
			err = fmt.Errorf("unknown item field %q", k.Str)
			return false
		}
		return true
	})
	if err == nil && it.Type == "" {
		err = fmt.Errorf("item has no type")
	}
	return it, err
}

func ScanTurn(sc Scanner) (projection.Turn, error) {
	var (
		t                    projection.Turn
		endSeq               sql.NullInt64
		started              string
		ended, code, message sql.NullString
		endAgent             sql.NullString
		agents               string
	)
	if err := sc.Scan(&t.Session, &t.ID, &t.Status, &t.Agent, &t.Input, &t.StartSeq, &endSeq, &started, &ended,
		&t.ModelCalls, &t.ToolCalls, &t.Usage.InputTokens, &t.Usage.OutputTokens, &t.Usage.CachedTokens, &t.Usage.ReasoningTokens, &t.ModelMS,
		&code, &message, &endAgent, &agents); err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(agents), &t.Agents); err != nil {
		return t, fmt.Errorf("turn %s: agents: %w", t.ID, err)
	}
	t.EndSeq = endSeq.Int64
	t.StartedAt, _ = time.Parse(time.RFC3339Nano, started)
	if ended.Valid {
		e, _ := time.Parse(time.RFC3339Nano, ended.String)
		t.EndedAt = &e
	}
	t.ErrorCode, t.ErrorMessage, t.EndAgent = events.Code(code.String), message.String, endAgent.String
	return t, nil
}

func NullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func NullInt(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

// JoinArray writes canonical items as one JSON array.
func JoinArray(items []json.RawMessage) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

// InterruptPolicy is the policy column of an interrupt: who asks, and about what.
type InterruptPolicy struct {
	Rule        string   `json:"rule"`
	Level       string   `json:"level"`
	Resources   []string `json:"resources"`
	Alternative string   `json:"alternative"`
}

// BlobRef is what an event row holds when its data lives in the blobs table.
type BlobRef struct {
	Blob string `json:"$blob"`
	Size int    `json:"size"`
}

func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func ScanKey(row Scanner) (projection.IdempotencyRecord, error) {
	var r projection.IdempotencyRecord
	var created, expires string
	if err := row.Scan(&r.Owner, &r.Key, &r.Route, &r.BodyHash, &r.Session, &r.Turn, &r.StartSeq, &created, &expires); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return r, err
		}
		return r, fmt.Errorf("read idempotency key: %w", err)
	}
	r.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	r.ExpiresAt, _ = time.Parse(time.RFC3339Nano, expires)
	return r, nil
}

// KeyTime is a fixed-width UTC time, so that expiry compares as text.
func KeyTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

// OneKeyRow is the outcome of a write to one claim of an idempotency key: it must
// have changed exactly one row, or the claim was another's by then (conflict).
func OneKeyRow(res sql.Result, err error, key string) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return events.Errorf(events.CodeConflict, "the claim of Idempotency-Key %q is no longer this request's", key)
	}
	return nil
}

func ScanHits(rows *sql.Rows, vectors bool) ([]projection.MemoryHit, error) {
	defer rows.Close()
	var out []projection.MemoryHit
	for rows.Next() {
		var h projection.MemoryHit
		var at string
		var vec []byte
		dest := []any{&h.ID, &h.Label, &h.Text, &at}
		if vectors {
			dest = append(dest, &vec)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		h.At, _ = time.Parse(time.RFC3339Nano, at)
		h.Vector = VectorOf(vec)
		out = append(out, h)
	}
	return out, rows.Err()
}

func VectorBytes(v []float32) any {
	if v == nil {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func VectorOf(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func ScanDelivery(sc Scanner) (projection.Delivery, error) {
	var d projection.Delivery
	var next int64
	var created, delivered string
	if err := sc.Scan(&d.ID, &d.App, &d.Webhook, &d.Event, &d.Session, &d.Turn, &d.Seq, &d.Status, &d.Attempts, &next, &created, &delivered, &d.LastStatus, &d.LastError); err != nil {
		return d, err
	}
	d.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	if d.Status == projection.DeliveryPending || d.Status == projection.DeliverySending {
		t := time.UnixMilli(next).UTC()
		d.NextAt = &t
	}
	if delivered != "" {
		t, _ := time.Parse(time.RFC3339Nano, delivered)
		d.DeliveredAt = &t
	}
	return d, nil
}

// ScanInterrupt reads a pending-interrupt row: session, turn, id, kind, path, call
// id, tool, arguments, reason, status, asked-at and the policy JSON.
func ScanInterrupt(sc Scanner) (projection.Interrupt, error) {
	var (
		i       projection.Interrupt
		args    sql.NullString
		status  string
		askedAt string
		policy  string
	)
	if err := sc.Scan(&i.Session, &i.Turn, &i.ID, &i.Kind, &i.Path, &i.CallID, &i.Tool, &args, &i.Reason, &status, &askedAt, &policy); err != nil {
		return i, err
	}
	var p InterruptPolicy
	if err := json.Unmarshal([]byte(policy), &p); err != nil {
		return i, err
	}
	i.Rule, i.Level, i.Resources, i.Alternative = p.Rule, p.Level, p.Resources, p.Alternative
	if args.Valid {
		i.Arguments = json.RawMessage(args.String)
	}
	i.Status = projection.InterruptStatus(status)
	i.RequestedAt, _ = time.Parse(time.RFC3339Nano, askedAt)
	return i, nil
}

// ScanQueued reads a queued-input row: session, turn, input, by, status, queued-at
// and seq.
func ScanQueued(sc Scanner) (projection.QueuedInput, error) {
	var q projection.QueuedInput
	var status, at string
	if err := sc.Scan(&q.Session, &q.Turn, &q.Input, &q.By, &status, &at, &q.Seq); err != nil {
		return q, err
	}
	q.Status = projection.QueueStatus(status)
	q.QueuedAt, _ = time.Parse(time.RFC3339Nano, at)
	return q, nil
}

// ScanUISession reads a sign-in row: id hash, key hash, user, admin (0 or 1), CSRF
// token, created-at and expires-at.
func ScanUISession(sc Scanner) (projection.UISession, error) {
	var u projection.UISession
	var created, expires string
	var admin int
	if err := sc.Scan(&u.IDHash, &u.KeyHash, &u.User, &admin, &u.CSRF, &created, &expires); err != nil {
		return u, err
	}
	u.Admin = admin == 1
	u.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	u.ExpiresAt, _ = time.Parse(time.RFC3339Nano, expires)
	return u, nil
}

// ScanReceipts reads erasure receipt rows (id, kind, subject, by, at, sessions JSON,
// counts JSON) and closes them.
func ScanReceipts(rows *sql.Rows) ([]projection.ErasureReceipt, error) {
	defer rows.Close()
	var out []projection.ErasureReceipt
	for rows.Next() {
		var r projection.ErasureReceipt
		var at, sessions, counts string
		if err := rows.Scan(&r.ID, &r.Kind, &r.Subject, &r.By, &at, &sessions, &counts); err != nil {
			return nil, err
		}
		r.At, _ = time.Parse(time.RFC3339Nano, at)
		if err := json.Unmarshal([]byte(sessions), &r.Sessions); err != nil {
			return nil, &events.Error{Code: events.CodeCorruptLog, Field: "erasures " + r.ID, Message: "bad sessions", Err: err}
		}
		if err := json.Unmarshal([]byte(counts), &r.Counts); err != nil {
			return nil, &events.Error{Code: events.CodeCorruptLog, Field: "erasures " + r.ID, Message: "bad counts", Err: err}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// All reads every row of rows with scan, and closes them.
func All[T any](rows *sql.Rows, scan func(Scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ScanString reads a row of one text column.
func ScanString(sc Scanner) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}

// ScanRaw reads a row of one JSON column.
func ScanRaw(sc Scanner) (json.RawMessage, error) {
	var b []byte
	err := sc.Scan(&b)
	return json.RawMessage(b), err
}

// ScanAudit reads an audit row: seq, turn, at, path, kind, tool, outcome, rule,
// reason, resources, exit code, diff, by, proposed and approved arguments. Only an
// integer is an exit code (another tool's "exit_code" may be anything).
func ScanAudit(sc Scanner) (projection.AuditEntry, error) {
	var e projection.AuditEntry
	var at string
	var exit any
	var proposed, approved, resources sql.NullString
	if err := sc.Scan(&e.Seq, &e.Turn, &at, &e.Path, &e.Kind, &e.Tool, &e.Outcome, &e.Rule, &e.Reason, &resources, &exit, &e.Diff,
		&e.By, &proposed, &approved); err != nil {
		return e, err
	}
	if resources.Valid && resources.String != "" {
		e.Resources = json.RawMessage(resources.String)
	}
	if proposed.Valid {
		e.Proposed = json.RawMessage(proposed.String)
	}
	if approved.Valid {
		e.Approved = json.RawMessage(approved.String)
	}
	e.At, _ = time.Parse(time.RFC3339Nano, at)
	switch v := exit.(type) {
	case int64:
		e.ExitCode = &v
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			e.ExitCode = &n
		}
	case []byte:
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			e.ExitCode = &n
		}
	}
	return e, nil
}

// ScanAsRun reads a history row as run: the item, the arguments a reviewer edited
// it to (NULL when none) and who, and shows the item as edited.
func ScanAsRun(sc Scanner) (json.RawMessage, error) {
	var raw []byte
	var edited sql.NullString
	var by string
	if err := sc.Scan(&raw, &edited, &by); err != nil {
		return nil, err
	}
	if !edited.Valid {
		return raw, nil
	}
	return AsEdited(raw, edited.String, by)
}

// DecodeItems decodes a session's history items (DecodeItem); a bad one is a
// corrupt log.
func DecodeItems(session string, raw []json.RawMessage) ([]events.Item, error) {
	out := make([]events.Item, len(raw))
	for i, r := range raw {
		var err error
		if out[i], err = DecodeItem(r); err != nil {
			return nil, &events.Error{Code: events.CodeCorruptLog, Field: "history of " + session, Message: "bad item", Err: err}
		}
	}
	return out, nil
}
