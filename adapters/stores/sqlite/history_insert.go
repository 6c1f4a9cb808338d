package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
)

// historyChunk is how many items one INSERT into proj_history holds at most.
const historyChunk = 32

// insertHistory adds a commit's items to proj_history, up to historyChunk rows a
// statement: each item is stored as the event holds it (canonical JSON), with no
// parse on the way in but the column's own json_valid check.
func (w *writer) insertHistory(ctx context.Context, session string, seq int64, turn string, items []json.RawMessage) error {
	for from := 0; from < len(items); from += historyChunk {
		chunk := items[from:min(from+historyChunk, len(items))]
		stmt, err := w.historyInsert(len(chunk))
		if err != nil {
			return err
		}
		args := make([]any, 0, 4+len(chunk))
		args = append(args, session, seq, turn, from)
		for _, it := range chunk {
			args = append(args, string(it))
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// historyInsert is the prepared INSERT of n rows: ?1 session, ?2 seq, ?3 turn, ?4 the
// first row's idx, then each row's item.
func (w *writer) historyInsert(n int) (*sql.Stmt, error) {
	if st := w.historyStmts[n]; st != nil {
		return st, nil
	}
	var q strings.Builder
	q.WriteString("INSERT INTO proj_history (session_id, seq, idx, turn_id, item) VALUES ")
	for i := 0; i < n; i++ {
		if i > 0 {
			q.WriteByte(',')
		}
		fmt.Fprintf(&q, "(?1, ?2, ?4 + %d, ?3, ?%d)", i, 5+i)
	}
	st, err := w.conn.PrepareContext(context.Background(), q.String())
	if err != nil {
		return nil, fmt.Errorf("prepare the history insert of %d rows: %w", n, err)
	}
	if w.historyStmts == nil {
		w.historyStmts = map[int]*sql.Stmt{}
	}
	w.historyStmts[n] = st
	return st, nil
}
