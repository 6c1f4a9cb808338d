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
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
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
		command := "sed -i {{match.1}}s/large/LARGE/ big.txt"
		cfg := fmt.Sprintf(`apps:
  ops:
    start_agent: worker
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: done
          - when: {input: "^edit line ([0-9]+)$"}
            tools: [{name: bash, arguments: '{"command": %q}'}]
    agents:
      worker: {llm: script, tools: [bash]}
    policy:
      mode: workspace-write
      workspace: %s
      workspace_scope: shared
      rules:
        - {name: shell, tools: [bash], decision: allow}
`, command, ws)
		tl, err := turnlog.Open(context.Background(), turnlog.Options{ConfigData: []byte(cfg), DB: db, Synchronous: "OFF"})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
		const turns = 100
		for n := range turns {
			st, err := tl.Engine.StartTurn(ctx, s.ID, fmt.Sprintf("edit line %d", (n+1)*97))
			if err != nil {
				b.Fatal(err)
			}
			if res, err := st.Wait(); err != nil || res.Status != fsm.StatusCompleted {
				b.Fatalf("%+v %v", res, err)
			}
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
