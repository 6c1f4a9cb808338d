package turnlog_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/pkg/turnlog"
)

func webhookConfig(decl string) string {
	return strings.Replace(toolConfig(`{function: ping}`), "    agents:\n", "    webhooks:\n      ops: "+decl+"\n    agents:\n", 1)
}

func loadWebhooks(t *testing.T, src string) (*turnlog.Apps, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.yaml")
	os.WriteFile(path, []byte(src), 0o644)
	apps, err := turnlog.LoadApps(context.Background(), turnlog.Options{Config: path, Functions: functions()})
	if err == nil {
		t.Cleanup(func() { apps.Close() })
	}
	return apps, err
}

// TestWebhookSettings: what agent.yaml says reaches the webhook, with its defaults.
func TestWebhookSettings(t *testing.T) {
	t.Setenv("HOOK_SECRET", "0123456789abcdef0123")
	t.Setenv("HOOK_NEXT", "fedcba98765432100123")
	apps, err := loadWebhooks(t, webhookConfig(`{url: "https://hooks.example.test/turnlog", events: [turn.failed, turn.suspended], secret_env: HOOK_SECRET, next_secret_env: HOOK_NEXT, timeout: 5s, backoff: 2s, max_backoff: 1m, max_attempts: 4}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(apps.Webhooks) != 1 {
		t.Fatalf("webhooks: %+v", apps.Webhooks)
	}
	h := apps.Webhooks[0]
	if h.App != "a" || h.Name != "ops" || h.URL != "https://hooks.example.test/turnlog" || !slices.Equal(h.Events, []string{"turn.failed", "turn.suspended"}) ||
		len(h.Secrets) != 2 || string(h.Secrets[1]) != "fedcba98765432100123" || h.Timeout != 5*time.Second || h.Backoff != 2*time.Second || h.MaxBackoff != time.Minute || h.MaxAttempts != 4 {
		t.Fatalf("webhook: %+v", h)
	}
	apps, err = loadWebhooks(t, webhookConfig(`{url: "http://127.0.0.1:9/x", secret_env: HOOK_SECRET}`))
	if err != nil || len(apps.Webhooks[0].Events) != 4 {
		t.Fatalf("no events: every kind, got %+v %v", apps.Webhooks, err)
	}
}

// TestWebhookErrorsNameTheField: every mistake in a webhook is refused at load with
// the file, line and field.
func TestWebhookErrorsNameTheField(t *testing.T) {
	t.Setenv("HOOK_SECRET", "0123456789abcdef0123")
	t.Setenv("HOOK_SHORT", "short")
	for decl, want := range map[string]string{
		`{secret_env: HOOK_SECRET}`:                                                            `apps.a.webhooks.ops.url: is required`,
		`{url: "ftp://127.0.0.1/x", secret_env: HOOK_SECRET}`:                                  `apps.a.webhooks.ops.url: must be an http or https URL`,
		`{url: "http://127.0.0.1:9/x"}`:                                                        `apps.a.webhooks.ops.secret_env: is required`,
		`{url: "http://127.0.0.1:9/x", secret_env: HOOK_SHORT}`:                                `apps.a.webhooks.ops.secret_env: environment variable HOOK_SHORT must hold a secret of at least 16 bytes`,
		`{url: "http://127.0.0.1:9/x", secret_env: HOOK_SECRET, next_secret_env: HOOK_NO}`:     `apps.a.webhooks.ops.next_secret_env: environment variable HOOK_NO`,
		`{url: "http://127.0.0.1:9/x", secret_env: HOOK_SECRET, events: [turn.done]}`:          `apps.a.webhooks.ops.events[0]: unknown value "turn.done" (one of turn.committed, turn.failed, turn.suspended, turn.canceled)`,
		`{url: "http://127.0.0.1:9/x", secret_env: HOOK_SECRET, timeout: soon}`:                `apps.a.webhooks.ops.timeout: must be a positive duration such as 30s, 10m or 1h30m, got "soon"`,
		`{url: "http://127.0.0.1:9/x", secret_env: HOOK_SECRET, backoff: 0s}`:                  `apps.a.webhooks.ops.backoff: must be a positive duration`,
		`{url: "http://127.0.0.1:9/x", secret_env: HOOK_SECRET, backoff: 1m, max_backoff: 1s}`: `apps.a.webhooks.ops.max_backoff: is shorter than backoff`,
		`{url: "http://127.0.0.1:9/x", secret_env: HOOK_SECRET, max_attempts: -1}`:             `apps.a.webhooks.ops.max_attempts: must not be negative`,
		`{url: "http://127.0.0.1:9/x", secret_env: HOOK_SECRET, method: PUT}`:                  `apps.a.webhooks.ops.method: is not a known key here`,
	} {
		_, err := loadWebhooks(t, webhookConfig(decl))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", decl, err, want)
			continue
		}
		if !strings.Contains(err.Error(), ":9:") && !strings.Contains(err.Error(), "[9:") {
			t.Errorf("%s: %v does not name the line", decl, err)
		}
	}
	if _, err := loadWebhooks(t, strings.Replace(webhookConfig(`{url: "http://127.0.0.1:9/x", secret_env: HOOK_SECRET}`), "ops:", "bad name:", 1)); err == nil || !strings.Contains(err.Error(), "apps.a.webhooks.bad name: is not a valid name here: letters, digits, _ and - only") {
		t.Errorf("a bad name: %v", err)
	}
}
