package systemtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestMakeHelpListsEveryTarget: `make help` names every target the Makefile documents
// with a ## comment, hyphenated ones too.
func TestMakeHelpListsEveryTarget(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed")
	}
	raw, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):[^=\n]*## `).FindAllStringSubmatch(string(raw), -1)
	if len(targets) < 10 {
		t.Fatalf("only %d documented targets", len(targets))
	}
	out, err := exec.Command("make", "-s", "help").CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	for _, m := range targets {
		if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(m[1]) + `\s`).Match(out) {
			t.Errorf("make help does not list %s:\n%s", m[1], out)
		}
	}
}

// TestEveryRouteHasARunnableExample: every path of /openapi.yaml is in a command of
// docs/api.md's shell blocks that TestAPIExamples runs (not only in a comment).
func TestEveryRouteHasARunnableExample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("httpapi/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Paths map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	var run []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		for _, line := range strings.Split(block[1], "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				run = append(run, line)
			}
		}
	}
	text := strings.Join(run, "\n")
	if len(spec.Paths) < 20 {
		t.Fatalf("only %d paths in openapi.yaml", len(spec.Paths))
	}
	for p := range spec.Paths {
		parts := regexp.MustCompile(`\{[a-z_]+\}`).Split(p, -1)
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile(strings.Join(parts, `[^/"\s]+`) + `(["\s?]|$)`)
		if !re.MatchString(text) {
			t.Errorf("docs/api.md runs no example of %s", p)
		}
	}
}

// TestDocsCiteOnlyWhatExists: every relative link of the Markdown files names a file
// the repository holds (and, with #anchor, a heading it has); no document cites a
// text the repository does not hold.
func TestDocsCiteOnlyWhatExists(t *testing.T) {
	t.Parallel()
	var docs []string
	for _, pattern := range []string{"*.md", "docs/*.md", "examples/*/*.md", "fixtures/*.md"} {
		m, _ := filepath.Glob(pattern)
		docs = append(docs, m...)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, d := range docs {
		raw, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		if strings.Contains(text, "SPEC §") {
			t.Errorf("%s cites the SPEC, which the repository does not hold", d)
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := d
			if file != "" {
				path = filepath.Join(filepath.Dir(d), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links %s, which does not exist", d, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !hasAnchor(t, path, anchor) {
				t.Errorf("%s links %s: no heading makes the anchor #%s", d, target, anchor)
			}
		}
	}
	if len(docs) < 10 {
		t.Fatalf("only %d Markdown files", len(docs))
	}
}

// hasAnchor says whether a Markdown file has a heading whose GitHub anchor is anchor.
func hasAnchor(t *testing.T, path, anchor string) bool {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}
