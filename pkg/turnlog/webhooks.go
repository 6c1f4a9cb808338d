package turnlog

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/turnlog/turnlog/adapters/delivery/webhook"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/projection"
)

// webhooks builds an app's webhooks.
func (b builder) webhooks(at, app string, hooks map[string]config.Webhook) ([]webhook.Hook, error) {
	var out []webhook.Hook
	for _, name := range config.SortedKeys(hooks) {
		c, at := hooks[name], at+".webhooks."+name
		if !safeName.MatchString(name) {
			return nil, b.doc.ErrAt(at, "a webhook's name is letters, digits, _ and - (%q)", name)
		}
		u, err := url.Parse(c.URL)
		if c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, b.doc.ErrAt(at+".url", "must be an http or https URL, got %q", c.URL)
		}
		h := webhook.Hook{App: app, Name: name, URL: c.URL, Events: c.Events, MaxAttempts: c.MaxAttempts}
		if len(h.Events) == 0 {
			h.Events = projection.WebhookEvents
		}
		for i, ev := range c.Events {
			if !slices.Contains(projection.WebhookEvents, ev) {
				return nil, b.doc.ErrAt(fmt.Sprintf("%s.events[%d]", at, i), "unknown event %q (%v)", ev, projection.WebhookEvents)
			}
		}
		if c.SecretEnv == "" {
			return nil, b.doc.ErrAt(at+".secret_env", "is required: it names the variable holding the secret that signs each delivery")
		}
		if h.Secrets, err = b.secrets(at, c.SecretEnv, c.NextSecretEnv); err != nil {
			return nil, err
		}
		if c.MaxAttempts < 0 {
			return nil, b.doc.ErrAt(at+".max_attempts", "must not be negative")
		}
		for _, d := range []struct {
			field, value, example string
			dst                   *time.Duration
		}{{"timeout", c.Timeout, "10s", &h.Timeout}, {"backoff", c.Backoff, "1s", &h.Backoff}, {"max_backoff", c.MaxBackoff, "10m", &h.MaxBackoff}} {
			if d.value == "" {
				continue
			}
			if *d.dst, err = b.duration(at+"."+d.field, d.value, d.example); err != nil {
				return nil, err
			}
		}
		if h.Backoff > 0 && h.MaxBackoff > 0 && h.MaxBackoff < h.Backoff {
			return nil, b.doc.ErrAt(at+".max_backoff", "is shorter than backoff (%s < %s)", h.MaxBackoff, h.Backoff)
		}
		out = append(out, h)
	}
	return out, nil
}

// secrets reads the signing secrets a config names: the one in use (secret_env) and
// the one being rotated in (next_secret_env).
func (b builder) secrets(at, secretEnv, nextSecretEnv string) ([][]byte, error) {
	var out [][]byte
	for _, ref := range []struct{ field, env string }{{"secret_env", secretEnv}, {"next_secret_env", nextSecretEnv}} {
		if ref.env == "" {
			continue
		}
		secret := os.Getenv(ref.env)
		switch {
		case len(secret) < 16 && b.opts.secretsOptional():
			continue // unsigned: it is never sent
		case secret == "":
			return nil, b.doc.ErrAt(at+"."+ref.field, "environment variable %s is not set: it holds the secret that signs each call (at least 16 bytes)", ref.env)
		case len(secret) < 16:
			return nil, b.doc.ErrAt(at+"."+ref.field, "environment variable %s must hold a secret of at least 16 bytes (it has %d)", ref.env, len(secret))
		}
		out = append(out, []byte(secret))
	}
	if nextSecretEnv != "" && secretEnv == "" {
		return nil, b.doc.ErrAt(at+".next_secret_env", "goes with secret_env")
	}
	return out, nil
}

// webhookClient sends deliveries: through opts.HTTPTransport when set, never
// following a redirect.
func webhookClient(opts Options) *http.Client {
	return &http.Client{Transport: opts.HTTPTransport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
