package sqlrows

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// The undo log's file contents (migrations 0016, postgres/0008): an event's
// Contents are written with it — each chunk and each content once, whoever sends it
// again, and the session's references to both — and read back only by a session
// that refers to them, or by a branch of one that does.

// The statements that write an event's contents (? placeholders).
const (
	QInsertChunk      = `INSERT INTO content_chunks (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING`
	QInsertContent    = `INSERT INTO contents (hash, size, chunks) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING`
	QInsertContentRef = `INSERT INTO content_refs (session_id, hash) VALUES (?, ?) ON CONFLICT (session_id, hash) DO NOTHING`
)

// Rows is the single-row insert q (INSERT … VALUES (?, …) …) made to insert n rows.
func Rows(q string, n int) string {
	at := strings.Index(q, "VALUES (")
	end := strings.Index(q[at:], ")") + at + 1
	group := q[at+len("VALUES ") : end]
	groups := make([]string, n)
	for i := range groups {
		groups[i] = group
	}
	return q[:at] + "VALUES " + strings.Join(groups, ", ") + q[end:]
}

// qContentOf is a content's size and chunks, when session or one it was branched
// from refers to it.
const qContentOf = `WITH RECURSIVE line (id) AS (
	SELECT CAST(? AS TEXT) UNION SELECT s.parent_id FROM proj_sessions s JOIN line l ON s.id = l.id WHERE s.parent_id IS NOT NULL AND s.parent_id <> '')
SELECT c.size, c.chunks FROM contents c
WHERE c.hash = ? AND EXISTS (SELECT 1 FROM content_refs r WHERE r.hash = c.hash AND r.session_id IN (SELECT id FROM line))`

const qChunk = `SELECT data FROM content_chunks WHERE hash = ?`

// CheckEvent refuses an event an append cannot keep: one without a type, a version
// or data, or whose contents do not say what they are (CheckContents); i is its
// index in the append.
func CheckEvent(i int, ev events.Event) error {
	field := fmt.Sprintf("events[%d]", i)
	if ev.Type == "" || ev.V <= 0 || len(ev.Data) == 0 {
		return events.FieldError(events.CodeInvalid, field, "type, version and data are required")
	}
	return CheckContents(field, ev.Contents)
}

// CheckContents refuses contents that do not say what they are: a hash not of the
// form "sha256:<hex>", chunks that do not add up to the size, a chunk whose bytes
// are not its hash's. field names the event.
func CheckContents(field string, cs []events.Content) error {
	for _, c := range cs {
		if !isHash(c.Hash) {
			return &events.Error{Code: events.CodeInvalid, Field: field + ".contents", Message: fmt.Sprintf("%q is not a content's hash", c.Hash)}
		}
		if c.Size < 0 || c.Size > 0 && len(c.Chunks) == 0 {
			return &events.Error{Code: events.CodeInvalid, Field: field + ".contents", Message: fmt.Sprintf("content %s of %d bytes has no chunks", c.Hash, c.Size)}
		}
		whole := sha256.New()
		var size int64
		for _, ch := range c.Chunks {
			whole.Write(ch.Data)
			size += int64(len(ch.Data))
			if ch.Data == nil {
				return &events.Error{Code: events.CodeInvalid, Field: field + ".contents", Message: fmt.Sprintf("chunk %s of content %s comes without its bytes", ch.Hash, c.Hash)}
			}
			if !isHash(ch.Hash) {
				return &events.Error{Code: events.CodeInvalid, Field: field + ".contents", Message: fmt.Sprintf("%q is not a chunk's hash", ch.Hash)}
			}
			if events.HashOf(ch.Data) != ch.Hash {
				return &events.Error{Code: events.CodeInvalid, Field: field + ".contents", Message: fmt.Sprintf("chunk %s of content %s does not hold what its hash says", ch.Hash, c.Hash)}
			}
		}
		// A content is kept once for every session: its chunks must make up its hash.
		if size != c.Size || "sha256:"+hex.EncodeToString(whole.Sum(nil)) != c.Hash {
			return &events.Error{Code: events.CodeInvalid, Field: field + ".contents", Message: fmt.Sprintf("the chunks of content %s do not make it up (%d bytes, the content says %d)", c.Hash, size, c.Size)}
		}
	}
	return nil
}

func isHash(h string) bool {
	hex, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ChunkList is how contents.chunks holds a content's chunks.
func ChunkList(c events.Content) string {
	hs := make([]string, len(c.Chunks))
	for i, ch := range c.Chunks {
		hs[i] = ch.Hash
	}
	return strings.Join(hs, " ")
}

// Queryer runs a read.
type Queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// qContentBytes is what the chunks session refers to hold.
const qContentBytes = `SELECT coalesce(sum(length(c.data)), 0) FROM content_refs r JOIN content_chunks c ON c.hash = r.hash WHERE r.session_id = ?`

// ContentBytes is what the chunks of the contents session refers to hold, each
// once, through q.
func ContentBytes(ctx context.Context, q Queryer, dialect func(string) string, session string) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, dialect(qContentBytes), session).Scan(&n); err != nil {
		return 0, fmt.Errorf("read the undo log's bytes of %s: %w", session, err)
	}
	return n, nil
}

// ReadContent reads the content hash for session (see qContentOf) through q,
// rewriting placeholders with dialect, and checks every chunk and the whole against
// their hashes. Errors: not_found, corrupt_log (a chunk missing or not what its
// hash says), internal.
func ReadContent(ctx context.Context, q Queryer, dialect func(string) string, session, hash string) ([]byte, error) {
	var size int64
	var list string
	err := q.QueryRowContext(ctx, dialect(qContentOf), session, hash).Scan(&size, &list)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, events.Errorf(events.CodeNotFound, "session %s holds no content %s", session, hash)
	}
	if err != nil {
		return nil, fmt.Errorf("read content %s: %w", hash, err)
	}
	out := make([]byte, 0, size)
	for _, ch := range strings.Fields(list) {
		var data []byte
		if err := q.QueryRowContext(ctx, dialect(qChunk), ch).Scan(&data); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil, &events.Error{Code: events.CodeCorruptLog, Field: hash, Message: "chunk " + ch + " is missing"}
			}
			return nil, fmt.Errorf("read chunk %s of %s: %w", ch, hash, err)
		}
		if events.HashOf(data) != ch {
			return nil, &events.Error{Code: events.CodeCorruptLog, Field: hash, Message: "chunk " + ch + " does not match its hash"}
		}
		out = append(out, data...)
	}
	if int64(len(out)) != size || events.HashOf(out) != hash {
		return nil, &events.Error{Code: events.CodeCorruptLog, Field: hash, Message: "the content's chunks do not make up its hash"}
	}
	return out, nil
}
