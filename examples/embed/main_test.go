package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestEmbeddedTurns runs the program as a user would: its own Go tool answers, its
// error reaches the model as a tool error, and bash runs sandboxed (as the sandbox's
// uid) although this is not the turnlog binary — the helper takes over in
// pkg/turnlog's init.
func TestEmbeddedTurns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for input, want := range map[string]string{
		"weather in Oslo":     "Oslo: 18°C, light rain",
		"weather in Atlantis": `"kind":"failed"`,
		"run id -u":           "1000000000",
		"hello":               "Ask me about the weather in a city.",
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"-config", "agent.yaml", "-db", filepath.Join(dir, "e.db"), "-workspace", filepath.Join(dir, "ws"), input}, &out, &errOut)
		if err != nil || !strings.Contains(out.String(), want) {
			t.Errorf("%s: %v\n%s%s\nwant %s", input, err, out.String(), errOut.String(), want)
		}
	}
}

// TestEmbeddedServer builds the program, serves its REST API and runs a turn over
// it with the program's key.
func TestEmbeddedServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "embed")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-config", "agent.yaml", "-db", filepath.Join(dir, "e.db"), "-workspace", filepath.Join(dir, "ws"), "-serve", "127.0.0.1:0", "-key", "k1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	var base string
	for sc.Scan() {
		if m := regexp.MustCompile(`serving on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatal("the program did not serve")
	}
	go io.Copy(io.Discard, stderr)
	post := func(path, body string) map[string]any {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer k1")
		client := &http.Client{Timeout: 30 * time.Second}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var v map[string]any
		json.NewDecoder(res.Body).Decode(&v)
		if res.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %v", path, res.StatusCode, v)
		}
		return v
	}
	session := post("/v1/sessions", `{"app": "weather"}`)
	turn := post("/v1/sessions/"+session["id"].(string)+"/turns", `{"input": "weather in Bergen"}`)
	if turn["output"] != "Bergen: 18°C, light rain" || session["owner"] != "ana" {
		t.Fatalf("session %v, turn %v", session, turn)
	}
}

// TestEmbeddedApproval: a turn that waits for a person (the policy asks about a
// deletion) is answered by the program and resumed; without an answer it says so.
func TestEmbeddedApproval(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"-config", "agent.yaml", "-db", filepath.Join(dir, "e.db"), "-workspace", ws}
	var out, errOut bytes.Buffer
	err := run(context.Background(), append(common, "run rm -v notes.txt"), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "-approve") {
		t.Fatalf("a waiting turn without an answer: %v\n%s", err, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if err := run(context.Background(), append(common, "-approve", "run rm -v notes.txt"), &out, &errOut); err != nil || !strings.Contains(out.String(), "removed") {
		t.Fatalf("approved: %v\n%s%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "the turn asks: bash") {
		t.Fatalf("the question is not shown: %s", errOut.String())
	}
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("the approved deletion did not run: %v", err)
	}
}

// TestItBuildsAsAnOutsideModule: the program builds in a module of its own that
// requires turnlog (through a replace to this checkout, as docs/embedding.md says),
// importing only pkg/turnlog, and answers a turn.
func TestItBuildsAsAnOutsideModule(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range regexp.MustCompile(`"github.com/turnlog/turnlog/[^"]+"`).FindAllString(string(src), -1) {
		if imp != `"github.com/turnlog/turnlog/pkg/turnlog"` {
			t.Errorf("the program imports %s beside pkg/turnlog", imp)
		}
	}
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/weather\n\ngo 1.26.8\n\nrequire github.com/turnlog/turnlog v0.0.0\n\nreplace github.com/turnlog/turnlog => " + repo + "\n"
	for name, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", "weather", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off") // what the cache holds: no network
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build as an outside module: %v\n%s", err, out)
	}
	cfg, _ := filepath.Abs("agent.yaml")
	run := exec.Command(filepath.Join(dir, "weather"), "-config", cfg, "-db", filepath.Join(dir, "w.db"), "-workspace", filepath.Join(dir, "ws"), "weather in Oslo")
	if out, err := run.CombinedOutput(); err != nil || !strings.Contains(string(out), "Oslo: 18°C, light rain") {
		t.Fatalf("the outside module's program: %v\n%s", err, out)
	}
}
