// Package receivers_test runs the Python and Node receivers of examples/receivers
// against a real turnlog.
package receivers_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/pkg/turnlog"
)

const notesConfig = `apps:
  notes:
    start_agent: keeper
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: add_note}
            reply: "{{output}}"
          - when: {input: '^note (.*)$'}
            tools: [{name: add_note, arguments: '{"text": "{{match.1}}"}'}]
          - reply: say 'note …'
    tools:
      add_note:
        url: "http://127.0.0.1:%s/notes"
        description: Add a note.
        parameters: {type: object, properties: {text: {type: string}}, required: [text]}
        secret_env: NOTES_SECRET
        dedupe: idempotency_key
        timeout: 5s
    agents:
      keeper: {llm: script, tools: [add_note]}
`

// TestTheReceiversKeepTheContract: each receiver, run as its own program, takes a
// real turnlog's signed call, applies it once though its first answer is lost (turnlog
// sends it again with the same key and gets the first answer), refuses an empty note
// with a message the model reads, and refuses a request whose signature does not
// verify.
func TestTheReceiversKeepTheContract(t *testing.T) {
	t.Setenv("NOTES_SECRET", "a-secret-of-at-least-16-bytes")
	for name, argv := range map[string][]string{
		"python": {"python3", "turnlog_receiver.py", "NOTES_SECRET"},
		"node":   {"node", "turnlog-receiver.mjs", "NOTES_SECRET"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := exec.LookPath(argv[0]); err != nil {
				t.Fatalf("%s is not installed", argv[0])
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := bufio.NewScanner(stdout)
			if !lines.Scan() {
				t.Fatal("the receiver did not start")
			}
			port := regexp.MustCompile(`^listening on (\d+)$`).FindStringSubmatch(lines.Text())
			if port == nil {
				t.Fatalf("the receiver said %q", lines.Text())
			}
			ctx := context.Background()
			tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(t.TempDir(), "t.db"), ConfigData: []byte(fmt.Sprintf(notesConfig, port[1]))})
			if err != nil {
				t.Fatal(err)
			}
			defer tl.Close()
			s, err := tl.Engine.CreateSession(ctx, "notes", "ana", nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := tl.Engine.RunTurn(ctx, s.ID, "note buy milk")
			if err != nil || !strings.Contains(res.Output, `"text":"buy milk"`) || !strings.Contains(res.Output, `"id":1`) {
				t.Fatalf("a note: %+v %v", res, err)
			}
			res, err = tl.Engine.RunTurn(ctx, s.ID, "note ")
			if err != nil || !strings.Contains(res.Output, "text is empty") {
				t.Fatalf("an empty note: %+v %v", res, err)
			}
			req, _ := http.NewRequest("POST", "http://127.0.0.1:"+port[1]+"/notes", bytes.NewReader([]byte(`{"text":"x"}`)))
			req.Header.Set("Idempotency-Key", "tl_forged")
			req.Header.Set("Turnlog-Signature", fmt.Sprintf("t=%d,v1=%064d", time.Now().Unix(), 0))
			if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a forged call: %v %v", r, err)
			} else {
				r.Body.Close()
			}
			stdin.Close()
			if !lines.Scan() || lines.Text() != "notes 1" {
				t.Fatalf("the receiver holds %q, want notes 1 (applied once, though sent twice)", lines.Text())
			}
			io.Copy(io.Discard, stdout)
			cmd.Wait()
		})
	}
}
