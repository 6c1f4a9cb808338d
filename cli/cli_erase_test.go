package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// TestEraseCommand: turnlog erase removes sessions from the file and prints each
// receipt; --user erases everything of one user; bad arguments say what is expected.
func TestEraseCommand(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "turnlog.db")
	var sessions []string
	for _, q := range []string{"where is order 42?", "and order 7?"} {
		_, stderr, err := runCLI(t, "run", "--db", db, q)
		if err != nil {
			t.Fatalf("run: %v %s", err, stderr)
		}
		sessions = append(sessions, strings.TrimSpace(strings.TrimPrefix(strings.Split(stderr, "\n")[0], "session ")))
	}
	out, _, err := runCLI(t, "erase", "--db", db, "--by", "ops", sessions[0])
	var rec projection.ErasureReceipt
	if err != nil || json.Unmarshal([]byte(out), &rec) != nil || rec.Subject != sessions[0] || rec.By != "ops" || rec.Counts.Events == 0 {
		t.Fatalf("erase: %v %s", err, out)
	}
	if _, _, err := runCLI(t, "export", "--db", db, sessions[0]); !events.IsCode(err, events.CodeNotFound) {
		t.Fatalf("export of the erased session: %v", err)
	}
	if _, _, err := runCLI(t, "erase", "--db", db, sessions[0]); !events.IsCode(err, events.CodeNotFound) || !strings.Contains(err.Error(), sessions[0]) {
		t.Fatalf("erase it again: %v", err)
	}
	owner := ""
	if out, _, err := runCLI(t, "export", "--db", db, sessions[1]); err == nil {
		var first struct {
			Data struct{ Owner string } `json:"data"`
		}
		json.Unmarshal([]byte(strings.Split(out, "\n")[0]), &first)
		owner = first.Data.Owner
	}
	if owner == "" {
		t.Fatal("no owner in the second session's first event")
	}
	out, _, err = runCLI(t, "erase", "--db", db, "--user", owner)
	if err != nil || json.Unmarshal([]byte(out), &rec) != nil || rec.Kind != "user" || rec.Counts.Sessions != 1 {
		t.Fatalf("erase --user: %v %s", err, out)
	}
	for _, args := range [][]string{{"erase", "--db", db}, {"erase", "--db", db, "--user", "x", sessions[1]}} {
		if _, _, err := runCLI(t, args...); !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), "SESSION_IDs or --user") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestServeRefusesBadOpsFlags: a serve flag of the operator's that makes no sense
// stops the server before it starts, naming the flag.
func TestServeRefusesBadOpsFlags(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "turnlog.db")
	for flag, value := range map[string]string{"--otlp-endpoint": "ftp://127.0.0.1:4318", "--wal-autocheckpoint": "-5", "--shutdown-grace": "0s", "--lease-ttl": "10ms", "--cache-sessions": "0"} {
		_, _, err := runCLI(t, "serve", "--dev", "--addr", "127.0.0.1:0", "--db", db, flag, value)
		if !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), strings.TrimPrefix(flag, "--")) {
			t.Errorf("serve %s %s: %v", flag, value, err)
		}
	}
}
