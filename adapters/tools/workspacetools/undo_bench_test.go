package workspacetools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/sandbox"
)

// BenchmarkRecordingOverhead: a command's sed -i of one line in each of 10,000 files
// of 4 KiB (each of its own content: none is held once for two), timed from the
// tool's start to its durable result — the command, its apply, the result appended
// to a SQLite log, the apply settled — with the undo log (what changed read, its
// contents cut and appended with the result) and without, in turns; reports
// recorded/plain, the time of all recorded runs ÷ that of all plain ones (the target
// is at most 1.15), and each one's median. The two sides alternate, so that the
// disk's drift falls on both.
func BenchmarkRecordingOverhead(b *testing.B) {
	ws := filepath.Join(b.TempDir(), "ws")
	content := make([]byte, 4096)
	for i := range content {
		content[i] = 'a' + byte(i%26)
		if i%64 == 63 {
			content[i] = '\n'
		}
	}
	for d := range 100 {
		dir := filepath.Join(ws, fmt.Sprintf("d%02d", d))
		os.MkdirAll(dir, 0o755)
		for f := range 100 {
			own := append([]byte(nil), content...)
			copy(own[len(own)-13:], fmt.Sprintf("\nfile %02d/%02d\n", d, f)) // every file a content of its own
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", f)), own, 0o644)
		}
	}
	store, _ := sqlite.MustOpen(b, sqlite.Options{})
	ctx := context.Background()
	seq, err := store.Append(ctx, "s1", 0, []events.Event{events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "main"})})
	if err != nil {
		b.Fatal(err)
	}
	last := seq[0].Seq
	flip := "s/^a/b/"
	call := 0
	step := func(record bool) time.Duration {
		call++
		start := time.Now()
		res, err := sandbox.Run(ctx, sandbox.Spec{Workspace: ws, Timeout: 10 * time.Minute, SettleLater: true}, "sed -i '1"+flip+"' d*/f*")
		if err != nil || res.ExitCode != 0 || res.Changes == nil || res.Changes.Count < 10_000 {
			b.Fatalf("%+v %v", res, err)
		}
		out, _ := json.Marshal(res)
		path := fmt.Sprintf("main/tool/c%d", call)
		evs := []events.Event{events.MustNew("t1", path, &events.ToolResulted{CallID: fmt.Sprint(call), Tool: "bash", Output: string(out)})}
		if record {
			changes, contents, err := recordChanges(res, DefaultUndoCaps)
			if err != nil || len(changes) < 10_000 {
				b.Fatalf("%d changes, %v", len(changes), err)
			}
			ev := events.MustNew("t1", path+"/files", &events.FilesChanged{CallID: fmt.Sprint(call), Tool: "bash", Changes: changes})
			ev.Contents = contents
			evs = append(evs, ev)
		}
		appended, err := store.Append(ctx, "s1", last, evs)
		if err != nil {
			b.Fatal(err)
		}
		last = appended[len(appended)-1].Seq
		if err := res.Settle(true); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		if flip == "s/^a/b/" {
			flip = "s/^b/a/"
		} else {
			flip = "s/^a/b/"
		}
		return took
	}
	var recorded, plain []time.Duration
	for i := 0; i < b.N; i++ {
		if i%2 == 0 { // in turns: the disk's speed drifts
			recorded = append(recorded, step(true))
			plain = append(plain, step(false))
		} else {
			plain = append(plain, step(false))
			recorded = append(recorded, step(true))
		}
	}
	b.ReportMetric(medianOf(recorded).Seconds(), "recorded-s")
	b.ReportMetric(medianOf(plain).Seconds(), "plain-s")
	b.ReportMetric(float64(sumOf(recorded))/float64(sumOf(plain)), "recorded/plain")
}

func sumOf(d []time.Duration) (s time.Duration) {
	for _, x := range d {
		s += x
	}
	return s
}

func medianOf(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
