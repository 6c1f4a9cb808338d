package systemtest

import (
	"bytes"
	"context"
	"database/sql"
	"github.com/turnlog/turnlog/cli"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

func fixtureDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("fixtures/*/events.jsonl")
	if err != nil || len(dirs) < 7 {
		t.Fatalf("fixtures: %v (%d found)", err, len(dirs))
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

func expectedError(t *testing.T, dir string) (events.Code, []string, bool) {
	raw, err := os.ReadFile(filepath.Join(dir, "expect-error"))
	if os.IsNotExist(err) {
		return "", nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	return events.Code(lines[0]), lines[1:], true
}

// TestEveryFixtureReplays replays each fixture through the CLI; bad fixtures must fail
// with their typed error and a message naming what differs.
func TestEveryFixtureReplays(t *testing.T) {
	t.Parallel()
	for _, dir := range fixtureDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			err := cli.Run(context.Background(), []string{"replay", dir}, &out, &errOut)
			code, texts, bad := expectedError(t, dir)
			if !bad {
				if err != nil || !strings.Contains(out.String(), "replay ok") {
					t.Fatalf("replay %s: %v\n%s%s", dir, err, out.String(), errOut.String())
				}
				return
			}
			if got := events.CodeOf(err); got != code {
				t.Fatalf("replay %s: error %v has code %s, want %s", dir, err, got, code)
			}
			for _, text := range texts {
				if !strings.Contains(err.Error(), text) {
					t.Fatalf("replay %s: error %q does not mention %q", dir, err, text)
				}
			}
		})
	}
}

// TestRebuildEqualsIncremental replays each good fixture (projections maintained in
// the append transaction), then rebuilds them from events and compares every row.
func TestRebuildEqualsIncremental(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, dir := range fixtureDirs(t) {
		if _, _, bad := expectedError(t, dir); bad {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			loaded, err := turnlog.LoadApps(ctx, turnlog.Options{Config: filepath.Join(dir, "agent.yaml"), Functions: cli.DefaultWiring().Functions})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { loaded.Close() })
			apps := loaded.List
			recorded, err := readFixture(filepath.Join(dir, "events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			clock := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
			store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: clock, Synchronous: "OFF"})
			e, err := fsm.New(store, apps, fsm.Options{Clock: clock, NewID: turnlog.NewULIDs()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Replay(ctx, recorded); err != nil {
				t.Fatal(err)
			}
			incremental, err := store.DumpProjections(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := store.Rebuild(ctx); err != nil || n != int64(len(recorded)) {
				t.Fatalf("rebuild folded %d events (%v), want %d", n, err, len(recorded))
			}
			rebuilt, err := store.DumpProjections(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rebuilt != incremental {
				t.Fatalf("rebuilt projections differ\nincremental:\n%s\nrebuilt:\n%s", incremental, rebuilt)
			}
			if !strings.Contains(incremental, "== proj_turns") || strings.Count(incremental, "\n") < 4 {
				t.Fatalf("projections look empty:\n%s", incremental)
			}
		})
	}
}

// TestFixturesKeepCausalOrder: in every recorded session, a model's answer text comes
// after the results of the calls its agent made before it — the order every stream
// of the log keeps (docs/api.md, "Order on a stream").
func TestFixturesKeepCausalOrder(t *testing.T) {
	t.Parallel()
	for _, dir := range fixtureDirs(t) {
		evs, err := readFixture(filepath.Join(dir, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		open := map[string]bool{}
		for _, ev := range evs {
			switch ev.Type {
			case events.TypeToolScheduled:
				open[ev.Path] = true
			case events.TypeToolResulted:
				delete(open, ev.Path)
			case events.TypeModelCalled:
				agent, _, ok := strings.Cut(ev.Path, "/model/")
				if !ok || !strings.Contains(string(ev.Data), `"text":`) {
					continue
				}
				for call := range open {
					if rest, ok := strings.CutPrefix(call, agent+"/tool/"); ok && !strings.Contains(rest, "/") {
						t.Errorf("%s: the text of %s (seq %d) precedes the result of %s", dir, ev.Path, ev.Seq, call)
					}
				}
			}
		}
	}
}

// TestAuditSaysWhoDidWhat loads recorded sessions into a store and reads their audit
// (the SQL view the REST route serves): people's answers with the tool, the arguments
// as proposed and approved, who answered and how; reviews; guardrails that stopped a
// turn; redactions.
func TestAuditSaysWhoDidWhat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want := map[string][]string{
		"approval-edited":      {"approval issue_refund edited"},
		"approval-reject":      {"approval issue_refund rejected"},
		"approval-expired":     {"approval issue_refund expired by turnlog"},
		"approval-approve":     {"approval issue_refund approved"},
		"review-approve":       {"review  approved"},
		"guardrail-input-trip": {"guardrail  tripped"},
		"policy-redact-block":  {"policy  redacted", "guardrail  blocked"},
	}
	for name, rows := range want {
		evs, err := readFixture(filepath.Join("fixtures", name, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
		if _, err := store.Append(ctx, evs[0].Session, 0, evs); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		audit, err := store.Audit(ctx, evs[0].Session)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range audit {
			line := a.Kind + " " + a.Tool + " " + a.Outcome
			if a.By == "turnlog" {
				line += " by turnlog"
			}
			got = append(got, line)
			if a.Kind == "approval" && (a.By == "" || len(a.Proposed) == 0) {
				t.Errorf("%s: an approval row without who or what: %+v", name, a)
			}
			if a.Outcome == "edited" && string(a.Proposed) == string(a.Approved) {
				t.Errorf("%s: an edit that changed nothing: %+v", name, a)
			}
			if a.Outcome == "rejected" && a.Kind == "approval" && a.Reason == "" {
				t.Errorf("%s: a rejection without its message: %+v", name, a)
			}
		}
		for _, r := range rows {
			if !slices.Contains(got, r) {
				t.Errorf("%s: the audit has no %q row: %v", name, r, got)
			}
		}
	}
}

// TestHistoryShowsAnEditedCallAsItRan loads recorded sessions into a store: the
// history people read (REST and the SQL view alike) shows a call a reviewer edited
// with the arguments it ran with, the proposal and the reviewer beside them, while
// the model's context keeps the call as it proposed it. A rebuild gives the same.
func TestHistoryShowsAnEditedCallAsItRan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, want := range map[string]string{
		"approval-edited":  `{"agent":"support","arguments":{"order_id":1001},"call_id":"call_1_1","edited_by":"dev","name":"issue_refund","proposed_arguments":{"order_id":42},"type":"function_call"}`,
		"approval-approve": `{"agent":"support","arguments":{"order_id":42},"call_id":"call_1_1","name":"issue_refund","type":"function_call"}`,
		"nested-approval":  `{"agent":"support","arguments":{"input":"refund order 42"},"call_id":"call_1_1","name":"ask_refund_desk","type":"function_call"}`,
	} {
		evs, err := readFixture(filepath.Join("fixtures", name, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		store, path := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
		sid := evs[0].Session
		if _, err := store.Append(ctx, sid, 0, evs); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		check := func(when string) {
			shown, err := store.HistoryAsRun(ctx, sid)
			if err != nil || len(shown) < 2 || string(shown[1]) != want {
				t.Fatalf("%s %s: history item 1 = %s (%v)\nwant %s", name, when, shown[1], err, want)
			}
			model, err := store.History(ctx, sid)
			if err != nil || model[1].Type != events.ItemFunctionCall || !strings.Contains(want, `"arguments":`+string(model[1].Arguments)) && !strings.Contains(want, `"proposed_arguments":`+string(model[1].Arguments)) {
				t.Fatalf("%s %s: the model's context has %+v (%v)", name, when, model[1], err)
			}
			if name == "approval-edited" && string(model[1].Arguments) != `{"order_id":42}` {
				t.Fatalf("%s %s: the model's context shows %s, not its proposal", name, when, model[1].Arguments)
			}
			db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var args, by, proposed sql.NullString
			if err := db.QueryRow(`SELECT arguments, edited_by, proposed_arguments FROM history WHERE session_id = ? AND type = 'function_call' ORDER BY seq, idx LIMIT 1`, sid).Scan(&args, &by, &proposed); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(want, `"arguments":`+args.String) || by.Valid != strings.Contains(want, "edited_by") ||
				by.Valid && (!strings.Contains(want, `"edited_by":"`+by.String+`"`) || !strings.Contains(want, `"proposed_arguments":`+proposed.String)) {
				t.Fatalf("%s %s: the history view says arguments %v, edited_by %v, proposed %v; REST says %s", name, when, args, by, proposed, want)
			}
		}
		check("as appended")
		if _, err := store.Rebuild(ctx); err != nil {
			t.Fatal(err)
		}
		check("after a rebuild")
	}
}

// TestHistoryEditsFilledOnUpgrade: a database made before reviewers' edits were kept
// beside the interrupt (schema version 8, an edited approval in it) gets them from its
// events when it is opened. A later migration is undone here too.
func TestHistoryEditsFilledOnUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	evs, err := readFixture(filepath.Join("fixtures", "approval-edited", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	store, path := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	sid := evs[0].Session
	if _, err := store.Append(ctx, sid, 0, evs); err != nil {
		t.Fatal(err)
	}
	store.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	// Back to schema version 8: undo 0009 and every later migration.
	for _, q := range []string{`DROP TABLE content_refs`, `DROP TABLE contents`, `DROP TABLE content_chunks`, `DROP TRIGGER events_append_only_delete`, `DROP TRIGGER blobs_append_only_delete`, `DROP TABLE erasures`, `DROP TABLE erasing`, `DROP TABLE ui_sessions`, `DROP VIEW webhook_deliveries`, `DROP TABLE webhook_outbox`,
		`DROP VIEW history`, `ALTER TABLE proj_interrupts DROP COLUMN answered_by`,
		`ALTER TABLE proj_interrupts DROP COLUMN edited_arguments`, `DROP VIEW eval_results`, `DROP TABLE proj_eval_results`,
		`DELETE FROM schema_migrations WHERE version >= 9`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	store, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	shown, err := store.HistoryAsRun(ctx, sid)
	if err != nil || len(shown) < 2 || !strings.Contains(string(shown[1]), `"arguments":{"order_id":1001},"call_id":"call_1_1","edited_by":"dev"`) {
		t.Fatalf("after the upgrade: %s %v", shown, err)
	}
}

// readFixture reads a recorded session (events.jsonl), as turnlog replay does.
func readFixture(path string) ([]events.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return events.ReadJSONL(f, path)
}
