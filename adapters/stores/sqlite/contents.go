package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
)

// contentBatch is how many rows one statement inserts of the undo log's contents: a
// command's changes to thousands of files cost tens of statements, not thousands.
const contentBatch = 64

// insertContents writes the contents ev carries and the session's references to
// them (and to their chunks), each once, in the order of their hashes (neighbours
// in the tables' B-trees).
func (w *writer) insertContents(ctx context.Context, ev events.Event) error {
	var chunks, contents, refs [][]any
	seen := map[string]bool{}
	ref := func(hash string) {
		if !seen[hash] {
			seen[hash] = true
			refs = append(refs, []any{ev.Session, hash})
		}
	}
	chunked, listed := map[string]bool{}, map[string]bool{}
	for _, c := range ev.Contents {
		for _, ch := range c.Chunks {
			if ch.Data != nil && !chunked[ch.Hash] {
				chunked[ch.Hash] = true
				chunks = append(chunks, []any{ch.Hash, ch.Data})
			}
			ref(ch.Hash)
		}
		if !listed[c.Hash] {
			listed[c.Hash] = true
			contents = append(contents, []any{c.Hash, c.Size, sqlrows.ChunkList(c)})
		}
		ref(c.Hash) // a content of one chunk has that chunk's hash: one reference
	}
	for _, t := range []struct {
		what      string
		rows      [][]any
		one, many *sql.Stmt
	}{{"chunks", chunks, w.insChunk, w.insChunks}, {"contents", contents, w.insContent, w.insContents}, {"references to contents", refs, w.insRef, w.insRefs}} {
		slices.SortFunc(t.rows, func(a, b []any) int { return compareHash(a, b, t.what) })
		if err := insertRows(ctx, t.rows, t.one, t.many); err != nil {
			return fmt.Errorf("store the undo log's %s: %w", t.what, err)
		}
	}
	return nil
}

// compareHash orders rows by their hash: a reference's second column, else the first.
func compareHash(a, b []any, what string) int {
	i := 0
	if what == "references to contents" {
		i = 1
	}
	x, y := a[i].(string), b[i].(string)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// insertRows runs many for each contentBatch rows and one for each row left.
func insertRows(ctx context.Context, rows [][]any, one, many *sql.Stmt) error {
	for len(rows) >= contentBatch {
		args := make([]any, 0, contentBatch*len(rows[0]))
		for _, r := range rows[:contentBatch] {
			args = append(args, r...)
		}
		if _, err := many.ExecContext(ctx, args...); err != nil {
			return err
		}
		rows = rows[contentBatch:]
	}
	for _, r := range rows {
		if _, err := one.ExecContext(ctx, r...); err != nil {
			return err
		}
	}
	return nil
}
