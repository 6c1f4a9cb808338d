package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryFlagHasItsEnvironmentTwin: a flag the command line leaves unset takes its
// TURNLOG_ twin's value (- as _), the command line wins, a bad value names the
// variable; and every command parses its flags this way.
func TestEveryFlagHasItsEnvironmentTwin(t *testing.T) {
	t.Setenv("TURNLOG_API_KEYS_FILE", "keys.txt")
	t.Setenv("TURNLOG_ADDR", "127.0.0.1:9")
	t.Setenv("TURNLOG_MAX_BODY", "many")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	keys := fs.String("api-keys-file", "", "")
	addr := fs.String("addr", "127.0.0.1:8080", "")
	if err := parseFlags(fs, []string{"--addr", "127.0.0.1:1"}); err != nil || *keys != "keys.txt" || *addr != "127.0.0.1:1" {
		t.Fatalf("keys %q addr %q: %v", *keys, *addr, err)
	}
	bad := flag.NewFlagSet("y", flag.ContinueOnError)
	bad.SetOutput(io.Discard)
	bad.Int("max-body", 0, "")
	if err := parseFlags(bad, nil); err == nil || !strings.Contains(err.Error(), "TURNLOG_MAX_BODY") {
		t.Fatalf("a bad twin: %v", err)
	}
	files, _ := filepath.Glob("*.go")
	direct := regexp.MustCompile(`\.Parse\(args`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "flags.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if direct.Match(src) {
			t.Errorf("%s parses flags without their environment twins (use parseFlags)", f)
		}
	}
}
