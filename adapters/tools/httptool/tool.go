package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
)

// Defaults of a tool's limits.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultTotalTimeout     = 2 * time.Minute
	DefaultMaxAttempts      = 4
	DefaultBackoff          = 250 * time.Millisecond
	MaxBackoff              = 5 * time.Second
	DefaultMaxResponseBytes = 1 << 20
)

// Config is one HTTP tool.
type Config struct {
	Name, Description string
	URL               string
	// Parameters is the JSON schema of the arguments; arguments that fail it are never
	// sent.
	Parameters json.RawMessage
	// Headers are sent with every call (the caller resolves their values).
	Headers map[string]string
	// Secrets sign every call, each with a v1 signature of its own (two while rotating);
	// none: the calls are unsigned.
	Secrets [][]byte
	// Timeout bounds one attempt, TotalTimeout every attempt and pause together.
	Timeout, TotalTimeout time.Duration
	// Retry sends a call again, with the same key, after a 5xx, 408 or 429 answer, a
	// timeout or a connection that failed: only for a tool that is idempotent or whose
	// receiver applies a key once.
	Retry       bool
	MaxAttempts int           // with Retry (default 4)
	Backoff     time.Duration // the first pause, doubling up to MaxBackoff
	// MaxResponseBytes caps an answer's body; a longer one is invalid_output.
	MaxResponseBytes int64
	// Transport, when set, carries the requests (tests); redirects are never followed.
	Transport http.RoundTripper
	Clock     func() time.Time // the signatures' timestamps (default time.Now)
}

// Tool is an HTTP endpoint as a turnlog tool.
type Tool struct {
	c      Config
	target string
	schema *functool.Schema
	client *http.Client
}

var (
	_ fsm.Tool               = (*Tool)(nil)
	_ fsm.ArgumentsValidator = (*Tool)(nil)
)

// New checks c and builds the tool.
func New(c Config) (*Tool, error) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url: an http or https URL is required, got %q", c.URL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("url: credentials belong in a header whose value comes from the environment, not in the URL")
	}
	if len(c.Parameters) == 0 {
		c.Parameters = json.RawMessage(`{"type":"object"}`)
	}
	schema, err := functool.CompileSchema(c.Parameters)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	for name := range c.Headers {
		for _, r := range ReservedHeaders {
			if http.CanonicalHeaderKey(name) == http.CanonicalHeaderKey(r) {
				return nil, fmt.Errorf("headers.%s: turnlog sets this header itself", name)
			}
		}
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.TotalTimeout <= 0 {
		c.TotalTimeout = max(DefaultTotalTimeout, c.Timeout)
	}
	if c.TotalTimeout < c.Timeout {
		return nil, fmt.Errorf("total_timeout: %s is shorter than one attempt's timeout (%s)", c.TotalTimeout, c.Timeout)
	}
	if c.MaxAttempts <= 0 || !c.Retry {
		c.MaxAttempts = map[bool]int{true: DefaultMaxAttempts, false: 1}[c.Retry]
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	transport := c.Transport
	if transport == nil {
		transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	client := &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Tool{c: c, target: u.RequestURI(), schema: schema, client: client}, nil
}

// Spec implements fsm.Tool: the engine's own deadline is the total timeout.
func (t *Tool) Spec() fsm.ToolSpec {
	return fsm.ToolSpec{Name: t.c.Name, Description: t.c.Description, Parameters: t.schema.JSON(), Idempotent: t.c.Retry, Timeout: t.c.TotalTimeout}
}

// ValidateArguments implements fsm.ArgumentsValidator.
func (t *Tool) ValidateArguments(args json.RawMessage) error { return t.schema.Validate(args) }

// Call posts args and reads the answer, retrying where the tool allows it.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	if err := t.schema.Validate(args); err != nil {
		return nil, err
	}
	call, ok := fsm.CallInfoFrom(ctx)
	if !ok {
		return nil, errors.New("an HTTP tool runs only within a turn (it needs the call's session, turn and path)")
	}
	key := IdempotencyKey(call.Session, call.Turn, call.Path)
	ctx, cancel := context.WithTimeout(ctx, t.c.TotalTimeout)
	defer cancel()
	pause := t.c.Backoff
	for attempt := 1; ; attempt++ {
		out, fail := t.attempt(ctx, call, key, attempt, args)
		if fail == nil {
			return out, nil
		}
		if !fail.retry || attempt >= t.c.MaxAttempts || ctx.Err() != nil {
			return nil, fail.toolError(attempt, t.c.Retry)
		}
		wait := pause
		if fail.retryAfter > 0 {
			wait = fail.retryAfter
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return nil, fail.toolError(attempt, t.c.Retry)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fail.toolError(attempt, t.c.Retry)
		case <-timer.C:
		}
		pause = min(2*pause, MaxBackoff)
	}
}

// attempt sends the call once.
func (t *Tool) attempt(ctx context.Context, call fsm.CallInfo, key string, attempt int, body []byte) (json.RawMessage, *failure) {
	actx, cancel := context.WithTimeout(ctx, t.c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, t.c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, &failure{kind: fsm.ToolErrFailed, msg: err.Error()}
	}
	if !t.c.Retry {
		// net/http resends a request with an Idempotency-Key on its own when a reused
		// connection breaks; a call that must be sent once must not be resent.
		req.GetBody = nil
	}
	for k, v := range t.c.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderIdempotencyKey, key)
	req.Header.Set(HeaderSession, call.Session)
	req.Header.Set(HeaderTurn, call.Turn)
	req.Header.Set(HeaderPath, call.Path)
	req.Header.Set(HeaderAgent, call.Agent)
	if call.User != "" {
		req.Header.Set(HeaderUser, call.User)
	}
	// The attempt counts on across the runs of the turn that sent the call before
	// (recovered after a crash): each may have made every attempt it had, unrecorded,
	// so this run's number from after theirs — gaps, never a number used twice.
	req.Header.Set(HeaderAttempt, fmt.Sprint(call.EarlierRuns*t.c.MaxAttempts+attempt))
	if len(t.c.Secrets) > 0 {
		req.Header.Set(HeaderSignature, Signature(t.c.Secrets, t.c.Clock().Unix(), key, http.MethodPost, t.target, body))
	}
	res, err := t.client.Do(req)
	if err != nil {
		return nil, transportFailure(ctx, actx, err, t.c.Timeout)
	}
	defer res.Body.Close()
	return t.answer(actx, res)
}
