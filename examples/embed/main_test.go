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
