package client_test

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/client"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// TestStreamsNeverShowStoppedText: an answer an output guardrail stops is never sent
// on a stream — not as the turn runs, not when the turn is followed from the log —
// and an answer a review holds is not sent before the review releases it.
func TestStreamsNeverShowStoppedText(t *testing.T) {
	t.Parallel()
	cfg := `
apps:
  demo:
    start_agent: support
    llms:
      m:
        provider: scripted
        rules:
          - when: {input: "^hold"}
            reply: "the refund code is R-77"
          - reply: "the secret is 1234-5678"
    agents:
      support:
        llm: m
        instructions: x
        guardrails:
          output:
            - {name: no-secrets, kind: regex, pattern: 'secret'}
guardrail_policy:
  - {name: refund-codes, action: review, pattern: 'R-[0-9]+', applies_to: [model_output]}
`
	tl, err := turnlog.Open(context.Background(), turnlog.Options{DB: filepath.Join(t.TempDir(), "turnlog.db"), ConfigData: []byte(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	handler, stop := tl.Handler(turnlog.ServeOptions{Keys: map[string]string{"k": "alice"}})
	t.Cleanup(stop)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	c, ctx := client.New(srv.URL, "k", nil), context.Background()
	read := func(st *client.Stream, err error) (names []string, texts string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for {
			ev, err := st.Next()
			if err == io.EOF {
				return names, texts
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, ev.Name)
			if ev.Name == "text_delta" {
				texts += string(ev.Data)
			}
		}
	}
	s, _ := c.CreateSession(ctx, "demo", nil)
	names, texts := read(c.StreamTurn(ctx, s.ID, client.TurnRequest{Input: "hi"}))
	if strings.Contains(texts, "1234-5678") || names[len(names)-1] != "turn_failed" {
		t.Fatalf("live: %v %s", names, texts)
	}
	turns, _ := c.Turns(ctx, s.ID)
	if _, texts = read(c.FollowTurn(ctx, s.ID, turns[0].TurnID)); strings.Contains(texts, "1234-5678") {
		t.Fatalf("followed from the log: %s", texts)
	}
	names, texts = read(c.StreamTurn(ctx, s.ID, client.TurnRequest{Input: "hold it"}))
	if strings.Contains(texts, "R-77") || names[len(names)-1] != "turn_suspended" {
		t.Fatalf("held for review: %v %s", names, texts)
	}
}
