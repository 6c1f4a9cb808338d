package workspacetools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
)

type bundle struct {
	dir, outside string
	tools        map[string]fsm.Tool
}

func setup(t *testing.T) bundle {
	t.Helper()
	base := t.TempDir()
	b := bundle{dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside"), tools: map[string]fsm.Tool{}}
	os.MkdirAll(b.dir, 0o755)
	os.MkdirAll(b.outside, 0o755)
	ws, err := sandbox.OpenWorkspace(b.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	for _, tool := range workspacetools.Tools(workspacetools.Shared(ws), nil) {
		b.tools[tool.Spec().Name] = tool
	}
	return b
}

func (b bundle) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(b.dir, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (b bundle) call(t *testing.T, tool string, args any) (map[string]any, error) {
	t.Helper()
	return b.callIn(t, "s0", tool, args)
}

// TestReadFilePagesABigFile: a 50 MB file is read a page at a time under the byte
// cap, each page saying it was cut and where to go on; a 50 MB line is cut too.
func TestReadFilePagesABigFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	line := strings.Repeat("x", 49) + "\n"
	f, _ := os.Create(filepath.Join(b.dir, "big.txt"))
	for i := 0; i < 1_000_000; i++ {
		f.WriteString(line)
	}
	f.Close()
	res, err := b.call(t, "read_file", map[string]any{"path": "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	content := res["content"].(string)
	if res["truncated"] != true || !strings.Contains(res["truncated_reason"].(string), "byte cap (65536)") || len(content) > 65536 ||
		!strings.HasPrefix(content, "1\txxx") {
		t.Fatalf("first page: truncated=%v reason=%v, %d bytes", res["truncated"], res["truncated_reason"], len(content))
	}
	next := int(res["next_start_line"].(float64))
	page, _ := b.call(t, "read_file", map[string]any{"path": "big.txt", "start_line": next, "end_line": next + 1})
	if page["content"] != fmt.Sprintf("%d\t%s\n%d\t%s\n", next, line[:49], next+1, line[:49]) || page["truncated"] != false {
		t.Fatalf("next page: %v", page)
	}
	one, _ := os.Create(filepath.Join(b.dir, "one-line.txt"))
	for i := 0; i < 50; i++ {
		one.WriteString(strings.Repeat("y", 1<<20))
	}
	one.Close()
	res, _ = b.call(t, "read_file", map[string]any{"path": "one-line.txt"})
	if res["truncated"] != true || !strings.Contains(res["truncated_reason"].(string), "longer than the byte cap") {
		t.Fatalf("a 50 MB line: %v", res["truncated_reason"])
	}
	os.WriteFile(filepath.Join(b.dir, "tool.bin"), []byte{0x7f, 'E', 'L', 'F', 0, 0, 1}, 0o644)
	if _, err := b.call(t, "read_file", map[string]any{"path": "tool.bin"}); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Fatalf("a binary file: %v", err)
	}
}

// TestFileToolsRefuseEscapes: no built-in tool reads or writes through a symlink
// leading out of the workspace, or a denied path.
func TestFileToolsRefuseEscapes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	os.WriteFile(filepath.Join(b.outside, "secret.txt"), []byte("outside secret"), 0o644)
	os.Symlink(filepath.Join(b.outside, "secret.txt"), filepath.Join(b.dir, "link"))
	os.Symlink(b.outside, filepath.Join(b.dir, "out"))
	b.write(t, ".env", "API_KEY=sk-live-0000")
	for tool, args := range map[string]map[string]any{
		"read_file":  {"path": "link"},
		"write_file": {"path": "out/planted.txt", "content": "x"},
	} {
		if _, err := b.call(t, tool, args); err == nil || !strings.Contains(err.Error(), "outside the workspace") {
			t.Fatalf("%s %v: err = %v", tool, args, err)
		}
	}
	if _, err := os.Stat(filepath.Join(b.outside, "planted.txt")); err == nil {
		t.Fatal("write_file wrote outside the workspace")
	}
	if _, err := b.call(t, "read_file", map[string]any{"path": ".env"}); err == nil || !strings.Contains(err.Error(), "denied by default") {
		t.Fatalf(".env: %v", err)
	}
	res, _ := b.call(t, "grep", map[string]any{"pattern": "secret|API_KEY"})
	if hits := res["hits"].([]any); len(hits) != 0 {
		t.Fatalf("grep found %v through a symlink or a denied file", hits)
	}
	res, _ = b.call(t, "glob", map[string]any{"pattern": "**"})
	for _, m := range res["matches"].([]any) {
		if s := m.(string); s == ".env" || strings.HasPrefix(s, "out/") {
			t.Fatalf("glob lists %s", s)
		}
	}
}

// TestWriteFile: a new file is created with a diff; an existing one needs overwrite;
// the diff of an overwrite is right; too much content is refused.
func TestWriteFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.call(t, "write_file", map[string]any{"path": "pkg/a.txt", "content": "one\ntwo\n"})
	if err != nil || res["created"] != true || res["diff"] != "--- a/pkg/a.txt\n+++ b/pkg/a.txt\n@@ -1 +1 @@\n+one\n+two\n" {
		t.Fatalf("create: %v %v", res, err)
	}
	if _, err := b.call(t, "write_file", map[string]any{"path": "pkg/a.txt", "content": "x"}); err == nil || !strings.Contains(err.Error(), "overwrite: true") {
		t.Fatalf("existing without overwrite: %v", err)
	}
	res, err = b.call(t, "write_file", map[string]any{"path": "pkg/a.txt", "content": "one\n2\ntwo\n", "overwrite": true})
	if err != nil || res["diff"] != "--- a/pkg/a.txt\n+++ b/pkg/a.txt\n@@ -2 +2 @@\n+2\n" {
		t.Fatalf("overwrite: %q %v", res["diff"], err)
	}
	if raw, _ := os.ReadFile(filepath.Join(b.dir, "pkg/a.txt")); string(raw) != "one\n2\ntwo\n" {
		t.Fatalf("file: %q", raw)
	}
	if _, err := b.call(t, "write_file", map[string]any{"path": "big", "content": strings.Repeat("z", workspacetools.MaxWriteBytes+1)}); err == nil {
		t.Fatal("an oversized write was accepted")
	}
}

// TestSearchCaps: glob skips dependency and build directories and caps its matches;
// grep caps hits, cuts long lines (marked) and skips binary files (listed).
func TestSearchCaps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := 0; i < 30; i++ {
		b.write(t, fmt.Sprintf("src/f%02d.go", i), "package src\n// TODO fix\n")
	}
	b.write(t, "node_modules/x/TODO.go", "// TODO\n")
	b.write(t, ".git/HEAD", "TODO\n")
	b.write(t, "long.txt", "TODO "+strings.Repeat("w", 1000)+"\n")
	os.WriteFile(filepath.Join(b.dir, "blob.bin"), []byte("TODO\x00\x01"), 0o644)
	res, _ := b.call(t, "glob", map[string]any{"pattern": "**/*.go", "max": 10})
	if len(res["matches"].([]any)) != 10 || res["truncated"] != true || !strings.Contains(res["truncated_reason"].(string), "more than 10") {
		t.Fatalf("glob: %v", res)
	}
	res, _ = b.call(t, "glob", map[string]any{"pattern": "**/TODO.go"})
	if len(res["matches"].([]any)) != 0 {
		t.Fatalf("glob walked node_modules: %v", res)
	}
	res, _ = b.call(t, "grep", map[string]any{"pattern": "TODO", "paths": "long.txt"})
	hits := res["hits"].([]any)
	if len(hits) != 1 || !strings.HasSuffix(hits[0].(string), "…[line cut]") || !strings.HasPrefix(hits[0].(string), "long.txt:1:TODO ") || res["truncated"] != true {
		t.Fatalf("grep long line: %v", res)
	}
	res, _ = b.call(t, "grep", map[string]any{"pattern": "TODO", "max_hits": 5})
	if len(res["hits"].([]any)) != 5 || res["truncated"] != true || !strings.Contains(res["truncated_reason"].(string), "more than 5 hits") {
		t.Fatalf("grep caps: %v", res)
	}
	res, _ = b.call(t, "grep", map[string]any{"pattern": "TODO", "paths": "*.bin"})
	if fmt.Sprint(res["skipped_binary"]) != "[blob.bin]" || len(res["hits"].([]any)) != 0 {
		t.Fatalf("grep binary: %v", res)
	}
}

func (b bundle) callIn(t *testing.T, session, tool string, args any) (map[string]any, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	out, err := b.tools[tool].Call(fsm.WithCallInfo(context.Background(), fsm.CallInfo{Session: session}), raw)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	json.Unmarshal(out, &m)
	return m, nil
}

// TestEditFile: an edit must match exactly once, needs the session to have read the
// file, is refused once the file changed on disk since, and reports the changed lines
// and a diff.
func TestEditFile(t *testing.T) {
	t.Parallel()
	const src = "package a\n\nfunc A() int { return 1 }\n\nfunc B() int { return 1 }\n"
	for _, tc := range []struct {
		name     string
		old, new string
		read     bool
		touch    bool // the file changes on disk after the read
		err      string
		changed  string
		diff     string
		session  string
	}{
		{name: "unique", old: "func A() int { return 1 }", new: "func A() int { return 2 }", read: true,
			changed: "[[3 3]]", diff: "@@ -3 +3 @@\n-func A() int { return 1 }\n+func A() int { return 2 }\n"},
		{name: "adds lines", old: "func B() int { return 1 }\n", new: "func B() int { return 1 }\n\nfunc C() {}\n", read: true,
			changed: "[[5 7]]", diff: "@@ -6 +6 @@\n+\n+func C() {}\n"},
		{name: "deletes", old: "\nfunc B() int { return 1 }\n", new: "", read: true, changed: "[[4 3]]", diff: "@@ -4 +4 @@\n-\n-func B() int { return 1 }\n"},
		{name: "zero matches", old: "func Z()", new: "x", read: true, err: "0 matches for old_string in a.go; read the file again"},
		{name: "two matches", old: "return 1", new: "return 3", read: true, err: "2 matches for old_string in a.go; include more context"},
		{name: "not read", old: "package a", new: "package b", err: "has not been read in this session"},
		{name: "read in another session", old: "package a", new: "package b", read: true, session: "other", err: "has not been read in this session"},
		{name: "changed since read", old: "package a", new: "package b", read: true, touch: true, err: "the file changed since it was read"},
	} {
		b := setup(t)
		b.write(t, "a.go", src)
		if tc.read {
			if _, err := b.callIn(t, "s1", "read_file", map[string]any{"path": "a.go", "end_line": 1}); err != nil {
				t.Fatal(err)
			}
		}
		if tc.touch {
			b.write(t, "a.go", src+"// someone else\n")
		}
		session := "s1"
		if tc.session != "" {
			session = tc.session
		}
		res, err := b.callIn(t, session, "edit_file", map[string]any{"path": "a.go", "old_string": tc.old, "new_string": tc.new})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			if raw, _ := os.ReadFile(filepath.Join(b.dir, "a.go")); !strings.HasPrefix(string(raw), src) {
				t.Fatalf("%s: a refused edit changed the file", tc.name)
			}
			continue
		}
		if err != nil || fmt.Sprint(res["changed_lines"]) != tc.changed || res["diff"] != "--- a/a.go\n+++ b/a.go\n"+tc.diff {
			t.Fatalf("%s: %v %v\ndiff:\n%v", tc.name, res, err, res["diff"])
		}
		if raw, _ := os.ReadFile(filepath.Join(b.dir, "a.go")); string(raw) != strings.Replace(src, tc.old, tc.new, 1) {
			t.Fatalf("%s: file is %q", tc.name, raw)
		}
		// The session's own edit is what it last saw: a second edit needs no new read.
		if _, err := b.callIn(t, session, "edit_file", map[string]any{"path": "a.go", "old_string": "package a", "new_string": "package z"}); err != nil {
			t.Fatalf("%s: a second edit: %v", tc.name, err)
		}
	}
}

// TestWritesGoThroughSymlinksInsideTheWorkspace: write_file and edit_file write where
// a symlink inside the workspace leads — a linked folder, a linked file — as they
// did before they wrote through the apply's executor.
func TestWritesGoThroughSymlinksInsideTheWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "real"), 0o755)
	os.Symlink("real", filepath.Join(dir, "link"))
	os.WriteFile(filepath.Join(dir, "target.txt"), []byte("one\n"), 0o644)
	os.Symlink("target.txt", filepath.Join(dir, "alias.txt"))
	ws, err := sandbox.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	tools := workspacetools.Tools(workspacetools.Shared(ws), nil)
	call := func(name, args string) {
		t.Helper()
		for _, tool := range tools {
			if tool.Spec().Name == name {
				if out, err := tool.Call(context.Background(), json.RawMessage(args)); err != nil {
					t.Fatalf("%s %s: %v %s", name, args, err, out)
				}
				return
			}
		}
		t.Fatalf("no %s", name)
	}
	call("write_file", `{"path": "link/new.txt", "content": "hi\n"}`)
	call("read_file", `{"path": "alias.txt"}`)
	call("edit_file", `{"path": "alias.txt", "old_string": "one", "new_string": "two"}`)
	if raw, _ := os.ReadFile(filepath.Join(dir, "real/new.txt")); string(raw) != "hi\n" {
		t.Fatalf("real/new.txt: %q", raw)
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, "target.txt")); string(raw) != "two\n" {
		t.Fatalf("target.txt: %q", raw)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "alias.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("alias.txt is no longer a link: %v %v", fi, err)
	}
}
