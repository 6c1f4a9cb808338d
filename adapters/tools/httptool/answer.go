package httptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/fsm"
)

// maxMessage caps the part of an error answer's body the model is shown.
const maxMessage = 2000

// unknownOutcome is what the model is told when a request may have been applied.
const unknownOutcome = "the outcome is unknown: the receiver may have acted; check before calling again for the same purpose"

// failure is one attempt that did not give an output.
type failure struct {
	kind       string
	msg        string
	public     bool          // shown to the model whatever show_errors says
	retry      bool          // safe to send again for a tool that allows it
	retryAfter time.Duration // the receiver's Retry-After
}

// toolError is what the model sees once no attempt is left.
func (f *failure) toolError(attempts int, retried bool) error {
	msg := f.msg
	if retried && attempts > 1 {
		msg = fmt.Sprintf("%s (after %d attempts with the same idempotency key)", msg, attempts)
	}
	return &fsm.ToolError{Kind: f.kind, Message: msg, Public: f.public}
}

// answer turns a response into the output or a failure.
func (t *Tool) answer(ctx context.Context, res *http.Response) (json.RawMessage, *failure) {
	body, err := io.ReadAll(io.LimitReader(res.Body, t.c.MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, &failure{kind: fsm.ToolErrTimeout, msg: fmt.Sprintf("the answer did not arrive within %s: %s", t.c.Timeout, unknownOutcome), public: true, retry: true}
		}
		return nil, &failure{kind: fsm.ToolErrOutcomeUnknown, msg: fmt.Sprintf("reading the answer (HTTP %d) failed: %v: %s", res.StatusCode, err, unknownOutcome), retry: true}
	}
	status := res.StatusCode
	switch {
	case status >= 200 && status < 300:
		if int64(len(body)) > t.c.MaxResponseBytes {
			return nil, &failure{kind: fsm.ToolErrInvalidOutput, msg: fmt.Sprintf("the answer is larger than %d bytes", t.c.MaxResponseBytes), public: true}
		}
		return output(res.Header.Get("Content-Type"), body, status)
	case status >= 300 && status < 400:
		return nil, &failure{kind: fsm.ToolErrFailed, msg: fmt.Sprintf("HTTP %d: the receiver answered with a redirect (to %q), which turnlog does not follow", status, res.Header.Get("Location")), public: true}
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests:
		return nil, &failure{kind: fsm.ToolErrFailed, msg: fmt.Sprintf("HTTP %d: %s", status, message(body)), public: true, retry: true, retryAfter: retryAfter(res)}
	case status >= 400 && status < 500:
		return nil, &failure{kind: fsm.ToolErrFailed, msg: fmt.Sprintf("HTTP %d: %s", status, message(body)), public: true}
	}
	return nil, &failure{kind: fsm.ToolErrOutcomeUnknown, msg: fmt.Sprintf("HTTP %d: %s: %s", status, message(body), unknownOutcome), retry: true, retryAfter: retryAfter(res)}
}

// output reads a 2xx body: JSON (application/json or +json) as it is — the engine
// canonicalises it —, text/plain as text, no body as null.
func output(contentType string, body []byte, status int) (json.RawMessage, *failure) {
	if len(body) == 0 {
		return json.RawMessage("null"), nil
	}
	media, params, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil && contentType != "":
		return nil, &failure{kind: fsm.ToolErrInvalidOutput, msg: fmt.Sprintf("HTTP %d with an unreadable Content-Type %q", status, contentType), public: true}
	case media == "application/json" || strings.HasSuffix(media, "+json"):
		if !json.Valid(body) {
			return nil, &failure{kind: fsm.ToolErrInvalidOutput, msg: fmt.Sprintf("HTTP %d: the answer says it is JSON but does not parse as JSON", status), public: true}
		}
		return body, nil
	case media == "text/plain":
		if cs := strings.ToLower(params["charset"]); cs != "" && cs != "utf-8" && cs != "us-ascii" {
			return nil, &failure{kind: fsm.ToolErrInvalidOutput, msg: fmt.Sprintf("HTTP %d: text in %s; turnlog reads UTF-8", status, cs), public: true}
		}
		if !utf8.Valid(body) {
			return nil, &failure{kind: fsm.ToolErrInvalidOutput, msg: fmt.Sprintf("HTTP %d: the text is not UTF-8", status), public: true}
		}
		text, _ := json.Marshal(string(body))
		return text, nil
	}
	return nil, &failure{kind: fsm.ToolErrInvalidOutput, msg: fmt.Sprintf("HTTP %d with Content-Type %q: an answer is application/json or text/plain", status, contentType), public: true}
}

// message is what an error answer says: the "error" string, "error.message",
// "message" or "detail" of a JSON body, else the body's text, cut to maxMessage.
func message(body []byte) string {
	if json.Valid(body) {
		for _, path := range []string{"error.message", "error", "message", "detail"} {
			if v := gjson.GetBytes(body, path); v.Type == gjson.String && v.Str != "" {
				return cut(v.Str)
			}
		}
	}
	text := strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD"))
	if text == "" {
		return "(no message)"
	}
	return cut(text)
}

func cut(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage], "") + "…"
}

func retryAfter(res *http.Response) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(res.Header.Get("Retry-After"))); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	return 0
}

// transportFailure classifies a request that got no answer: refused before anything
// was sent (nothing was done), or cut while the receiver may have acted.
func transportFailure(ctx, attempt context.Context, err error, timeout time.Duration) *failure {
	switch {
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &failure{kind: fsm.ToolErrCanceled, msg: "the call was canceled: " + unknownOutcome, public: true}
	case attempt.Err() != nil:
		return &failure{kind: fsm.ToolErrTimeout, msg: fmt.Sprintf("no answer within %s: %s", timeout, unknownOutcome), public: true, retry: true}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &failure{kind: fsm.ToolErrFailed, msg: "the receiver refused the connection: the request was not delivered, nothing was done", public: true, retry: true}
	}
	return &failure{kind: fsm.ToolErrOutcomeUnknown, msg: fmt.Sprintf("the request failed: %v: %s", errors.Unwrap(err), unknownOutcome), retry: true}
}
