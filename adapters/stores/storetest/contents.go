package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
	"github.com/turnlog/turnlog/undo"
)

// contentOf is data as the undo log holds it: its hash, size and chunks.
func contentOf(t *testing.T, data []byte) events.Content {
	t.Helper()
	c := events.Content{Hash: events.HashOf(data), Size: int64(len(data))}
	if err := undo.Split(bytes.NewReader(data), func(b []byte) error {
		c.Chunks = append(c.Chunks, events.Chunk{Hash: events.HashOf(b), Data: bytes.Clone(b)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

func filesChanged(call string, cs ...events.Content) events.Event {
	fc := &events.FilesChanged{CallID: call, Tool: "bash"}
	for i, c := range cs {
		fc.Changes = append(fc.Changes, events.FileChange{Path: fmt.Sprintf("f%d", i),
			After: &events.FileState{Kind: events.FileKindFile, Mode: 0o644, Size: c.Size, Hash: c.Hash}})
	}
	ev := events.MustNew("t1", "main/tool/"+call+"/files", fc)
	ev.Contents = cs
	return ev
}

// fileContents: the contents an append carries are read back whole by the session
// that wrote them and by its branches, by no other session; a content is held once
// however many sessions hold it; contents that do not say what they are change
// nothing; an erasure removes what only its sessions held and keeps the rest.
func fileContents(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	var own []byte // about 100 KiB: many chunks
	for i := range 4000 {
		own = fmt.Appendf(own, "line %d of s1's own file\n", i*7919)
	}
	shared := []byte("held by both sessions\n")
	a, b := contentOf(t, own), contentOf(t, shared)
	if len(a.Chunks) < 3 {
		t.Fatalf("%d chunks", len(a.Chunks))
	}
	newSession(t, s, "s1", "alice")
	newSession(t, s, "s2", "bob")
	if _, err := s.Append(ctx, "s1", 1, []events.Event{filesChanged("c1", a, b)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "s2", 1, []events.Event{filesChanged("c1", b), filesChanged("c2", b)}); err != nil {
		t.Fatal(err)
	}
	branched := events.MustNew("", "", &events.SessionBranched{App: "demo", Owner: "alice", Agent: "main", SourceSession: "s1", SourceSeq: 2})
	if _, err := s.Append(ctx, "b1", 0, []events.Event{branched}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		session string
		want    []byte
		content events.Content
	}{{"s1", own, a}, {"s1", shared, b}, {"s2", shared, b}, {"b1", own, a}} {
		got, err := s.Content(ctx, c.session, c.content.Hash)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Fatalf("%s read %s: %d bytes, %v", c.session, c.content.Hash, len(got), err)
		}
	}
	if _, err := s.Content(ctx, "s2", a.Hash); !isCode(err, events.CodeNotFound) {
		t.Fatalf("s2 read s1's content: %v", err)
	}
	evs, err := s.Events(ctx, "s1", 1)
	if err != nil || len(evs) != 1 || evs[0].Contents != nil {
		t.Fatalf("read back: %+v %v", evs, err)
	}

	bad := contentOf(t, []byte("what it says it is not"))
	bad.Chunks[0].Data = []byte("other bytes")
	noBytes := contentOf(t, []byte("sent without its bytes"))
	noBytes.Chunks[0].Data = nil
	notWhole := contentOf(t, []byte("chunks of another content"))
	notWhole.Hash = events.HashOf([]byte("the content it says it is"))
	for what, c := range map[string]events.Content{"a chunk not its hash's": bad, "a chunk without bytes": noBytes, "chunks that are not the content": notWhole,
		"a hash of no form": {Hash: "md5:x", Size: 0}} {
		if _, err := s.Append(ctx, "s1", 2, []events.Event{filesChanged("c3", c)}); !isCode(err, events.CodeInvalid) {
			t.Errorf("%s: %v", what, err)
		}
	}
	if last, err := s.LastSeq(ctx, "s1"); err != nil || last != 2 {
		t.Fatalf("refused appends wrote: last seq %d, %v", last, err)
	}

	rec, err := s.Erase(ctx, erasureRequest("e1", "s1", "b1"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Counts.FileContents != 1 || rec.Counts.ContentChunks != len(a.Chunks) {
		t.Errorf("the erasure removed %d contents and %d chunks, want 1 and %d (what s2 holds stays)", rec.Counts.FileContents, rec.Counts.ContentChunks, len(a.Chunks))
	}
	if got, err := s.Content(ctx, "s2", b.Hash); err != nil || !bytes.Equal(got, shared) {
		t.Fatalf("s2's content after s1 was erased: %q %v", got, err)
	}
	if _, err := s.Content(ctx, "s1", a.Hash); !isCode(err, events.CodeNotFound) {
		t.Fatalf("an erased session's content: %v", err)
	}
}

// FileChangesLog is a session's log of two calls' changes — the second's data large
// enough to be stored as a blob —, and how many rows the file_changes view shows of
// it: for each store's own test of its view.
func FileChangesLog(session string) (evs []events.Event, rows int) {
	evs = append(evs, events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "main"}))
	small := &events.FilesChanged{CallID: "c1", Tool: "bash", Changes: []events.FileChange{
		{Path: "a.txt", After: &events.FileState{Kind: events.FileKindFile, Mode: 0o644, Mtime: "2026-01-02T03:04:05Z", Hash: events.HashOf([]byte("a"))}},
		{Path: "gone", Before: &events.FileState{Kind: events.FileKindDir, Mode: 0o755, Mtime: "2026-01-02T03:04:05Z"}, NotRevertible: "a test's"}}}
	big := &events.FilesChanged{CallID: "c2", Tool: "bash"}
	for i := range 2000 {
		big.Changes = append(big.Changes, events.FileChange{Path: fmt.Sprintf("many/f%04d", i),
			After: &events.FileState{Kind: events.FileKindFile, Mode: 0o644, Mtime: "2026-01-02T03:04:05Z", Hash: events.HashOf([]byte{byte(i)})}})
	}
	rev := &events.WorkspaceReverted{RevertID: "r1", Turns: []string{"t1"}, By: "alice", Forced: true, Changes: small.Changes[:1]}
	evs = append(evs, events.MustNew("t1", "main/tool/c1/files", small), events.MustNew("t1", "main/tool/c2/files", big),
		events.MustNew("", "revert/r1", rev))
	for i := range evs {
		evs[i].Session = session
	}
	return evs, len(small.Changes) + len(big.Changes) + len(rev.Changes)
}

// AuditReader reads a session's audit.
type AuditReader interface {
	Audit(ctx context.Context, session string) ([]projection.AuditEntry, error)
}

// CheckFilesAudit checks the audit of a session whose log is FileChangesLog's: a
// files row a call, at its path, with its count and its first 50 paths, and a
// revert row with who asked.
func CheckFilesAudit(t *testing.T, r AuditReader, session string) {
	t.Helper()
	rows, err := r.Audit(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range rows {
		var paths []string
		if err := json.Unmarshal(e.Resources, &paths); err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
		got = append(got, fmt.Sprintf("%s %s %s %q %s %q %q %d %s", e.Kind, e.Turn, e.Path, e.Tool, e.Outcome, e.Reason, e.By, len(paths), paths[0]))
	}
	want := []string{
		`files t1 main/tool/c1 "bash" 2 paths changed "1 cannot be reverted" "" 2 a.txt`,
		`files t1 main/tool/c2 "bash" 2000 paths changed "" "" 50 many/f0000`,
		`revert  revert/r1 "" 1 paths put back (forced) "reverts the turns t1" "alice" 1 a.txt`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the audit's files:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
