package turnlog_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
)

// BenchmarkUndoBytesOfLineEdits: 100 turns, each a command editing one line of a
// 1 MB file (another line each turn), recorded by the undo log on SQLite: the bytes
// its contents take (content_chunks), against the bound 1 MB + 100 × 64 KiB — the
// file once, then the chunks each edit touched (undo.Split cuts at content-defined
// boundaries, so an edit holds only the chunks around it).
func BenchmarkUndoBytesOfLineEdits(b *testing.B) {
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		ws := filepath.Join(dir, "ws")
		os.MkdirAll(ws, 0o755)
		var big strings.Builder
		for n := 0; big.Len() < 1<<20; n++ {
			fmt.Fprintf(&big, "line %06d of a large file that each turn edits one line of\n", n)
		}
		os.WriteFile(filepath.Join(ws, "big.txt"), []byte(big.String()[:1<<20]), 0o644)
		db := filepath.Join(dir, "t.db")
		// Each turn edits the line its input names: 97 lines after the turn before's.
		tl := opsApp(b, ws, db, `          - when: {input: "^edit line ([0-9]+)$"}
            tools: [{name: bash, arguments: '{"command": "sed -i {{match.1}}s/large/LARGE/ big.txt"}'}]
`, "", "bash")
		ctx := context.Background()
		s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
		const turns = 100
		for n := range turns {
			completeTurn(b, tl, s.ID, fmt.Sprintf("edit line %d", (n+1)*97))
		}
		evs, err := tl.Store.Events(ctx, s.ID, 0)
		if err != nil {
			b.Fatal(err)
		}
		recorded := 0
		for _, ev := range evs {
			if ev.Type == events.TypeFilesChanged {
				recorded++
			}
		}
		if recorded != turns {
			b.Fatalf("%d of %d turns recorded a change", recorded, turns)
		}
		tl.Close()
		conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		var stored, contents int64
		if err := conn.QueryRow(`SELECT coalesce(sum(length(data)), 0), (SELECT count(*) FROM contents) FROM content_chunks`).Scan(&stored, &contents); err != nil {
			b.Fatal(err)
		}
		conn.Close()
		bound := int64(1<<20 + turns*64<<10)
		b.ReportMetric(float64(stored)/(1<<20), "stored-MiB")
		b.ReportMetric(float64(stored)/float64(bound), "stored/bound")
		b.ReportMetric(float64(contents), "contents")
	}
}
