package policy

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestCommandTable runs the hand-written cases of testdata/commands.tsv — mode,
// expected decision, the attack class it stands for, command — through Engine.Shell,
// the code path of `turnlog policy check`.
func TestCommandTable(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/commands.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cols := strings.SplitN(text, "\t", 4)
		if len(cols) != 4 {
			t.Fatalf("line %d: want 4 tab-separated columns: %q", line, text)
		}
		mode, want, class, cmd := Mode(cols[0]), Decision(cols[1]), cols[2], cols[3]
		e := &Engine{Mode: mode, Workspace: "/work/repo"}
		if v := e.Shell(Subject{Agent: "a", Tool: "bash"}, cmd); v.Decision != want {
			t.Errorf("line %d (%s, %s): %s → %s (%s, %s), want %s", line, mode, class, cmd, v.Decision, v.Level, v.Reason, want)
		}
		n++
	}
	if n < 300 {
		t.Fatalf("only %d cases", n)
	}
}
