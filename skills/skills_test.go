package skills_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/skills"
)

func write(t *testing.T, root, name, content string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	os.MkdirAll(dir, 0o755)
	file := filepath.Join(dir, skills.File)
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

const goodSkill = `---
name: go-testing
description: How to run and fix the Go tests of this repository.
triggers: [failing test, go test]
required_tools: [bash]
permissions:
  - execute: go test ./...
  - read: "**/*_test.go"
---
Run ` + "`go test ./...`" + ` first; read the failing test before the code.
`

func TestParse(t *testing.T) {
	root := t.TempDir()
	write(t, root, "go-testing", goodSkill)
	os.MkdirAll(filepath.Join(root, "go-testing", "references"), 0o755)
	os.WriteFile(filepath.Join(root, "go-testing", "references", "flaky.md"), []byte("x"), 0o644)
	set, err := skills.Load([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	sk, ok := set.Get("go-testing")
	if !ok || sk.Description != "How to run and fix the Go tests of this repository." || len(sk.Permissions) != 2 ||
		sk.Permissions[0] != (skills.Permission{Action: "execute", Resource: "go test ./..."}) || !strings.HasPrefix(sk.Body, "Run `go test") ||
		strings.Join(sk.References, ",") != "references/flaky.md" || len(sk.SHA256) != 64 {
		t.Fatalf("%+v", sk)
	}
	if idx := set.Index(); !strings.Contains(idx, "- go-testing: How to run and fix the Go tests of this repository. [when: failing test; go test] (") || strings.Contains(idx, "Run `go test") {
		t.Fatalf("index: %s", idx)
	}
	if doc := sk.Document(); !strings.Contains(doc, "read references with read_file") || !strings.Contains(doc, "- references/flaky.md") {
		t.Fatalf("document: %s", doc)
	}
}

// TestMalformedSkillsNameFileAndLine: every way a SKILL.md can be wrong stops the
// load with the file and the line.
func TestMalformedSkillsNameFileAndLine(t *testing.T) {
	for name, c := range map[string]struct{ content, want string }{
		"no front matter":  {"# just text\n", ":1: a SKILL.md starts with front matter"},
		"never closed":     {"---\nname: x\n", ":1: the front matter is never closed"},
		"unknown field":    {"---\nname: x\ndescription: y\ncolour: red\n---\nbody\n", ":4: unknown field \"colour\""},
		"bad yaml":         {"---\nname: x\ndescription: [unclosed\n---\n", ":3: sequence end token"},
		"no name":          {"---\ndescription: y\n---\n", ":1: name is required"},
		"long name":        {"---\nname: " + strings.Repeat("n", 65) + "\ndescription: y\n---\n", ":2: name is 65 characters; at most 64"},
		"long description": {"---\nname: x\ndescription: " + strings.Repeat("d", 1025) + "\n---\n", ":3: description is 1025 characters; at most 1024"},
		"bad action":       {"---\nname: x\ndescription: y\npermissions:\n  - launch: rockets\n---\n", ":5: unknown action \"launch\""},
		"two in one":       {"---\nname: x\ndescription: y\npermissions:\n  - {read: a, write: b}\n---\n", ":5: a permission is one action"},
	} {
		root := t.TempDir()
		file := write(t, root, "s", c.content)
		_, err := skills.Load([]string{root})
		if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s and %q", name, err, file, c.want)
		}
	}
	root := t.TempDir()
	write(t, root, "a", goodSkill)
	write(t, root, "b", goodSkill)
	if _, err := skills.Load([]string{root}); err == nil || !strings.Contains(err.Error(), `skill name "go-testing" is taken by`) {
		t.Errorf("duplicate names: %v", err)
	}
}
