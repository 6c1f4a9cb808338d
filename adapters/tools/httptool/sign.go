package httptool

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers turnlog sets on every call.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderSignature      = "Turnlog-Signature"
	HeaderSession        = "Turnlog-Session"
	HeaderTurn           = "Turnlog-Turn"
	HeaderPath           = "Turnlog-Path"
	HeaderAgent          = "Turnlog-Agent"
	HeaderUser           = "Turnlog-User"
	HeaderAttempt        = "Turnlog-Attempt"
)

// ReservedHeaders are the headers a tool's configuration may not set: turnlog's own
// and those the request's body decides.
var ReservedHeaders = []string{HeaderIdempotencyKey, HeaderSignature, HeaderSession, HeaderTurn,
	HeaderPath, HeaderAgent, HeaderUser, HeaderAttempt, "Content-Type", "Content-Length", "Host"}

// IdempotencyKey is the key of one call: a hash of its session, turn and activity
// path, so every retry and every restart sends the same key and no two calls share
// one (a branch is another session).
func IdempotencyKey(session, turn, path string) string {
	sum := sha256.Sum256([]byte("turnlog-call\x00" + session + "\x00" + turn + "\x00" + path))
	return "tl_" + hex.EncodeToString(sum[:20])
}

// SignedPayload is what a signature covers: the Unix timestamp, the idempotency key,
// the method, the request target (path and query, as sent) and the body, joined by
// dots. A captured request cannot be replayed under another key or at another time.
func SignedPayload(timestamp int64, key, method, target string, body []byte) []byte {
	head := fmt.Sprintf("%d.%s.%s.%s.", timestamp, key, method, target)
	return append([]byte(head), body...)
}

// Signature is the header value: "t=<unix seconds>,v1=<hex HMAC-SHA256>", one v1 per
// secret (two while a secret is rotated: a receiver accepts a request when any v1
// matches its secret).
func Signature(secrets [][]byte, timestamp int64, key, method, target string, body []byte) string {
	payload := SignedPayload(timestamp, key, method, target, body)
	parts := []string{"t=" + strconv.FormatInt(timestamp, 10)}
	for _, s := range secrets {
		mac := hmac.New(sha256.New, s)
		mac.Write(payload)
		parts = append(parts, "v1="+hex.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(parts, ",")
}

// ErrBadSignature is what Verify returns for a request it does not accept.
var ErrBadSignature = errors.New("turnlog signature does not verify")

// Verify checks a request turnlog sent, for receivers written in Go: the signature
// matches one of secrets (the one in use and, during a rotation, the next) and its
// timestamp is within tolerance of now.
func Verify(secrets [][]byte, h http.Header, method, target string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts int64 = -1
	var sigs [][]byte
	for _, part := range strings.Split(h.Get(HeaderSignature), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%w: timestamp %q", ErrBadSignature, v)
			}
			ts = n
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	if ts < 0 || len(sigs) == 0 {
		return fmt.Errorf("%w: no t= and v1= in %s", ErrBadSignature, HeaderSignature)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: timestamp %d is %s away from now", ErrBadSignature, ts, d.Round(time.Second))
	}
	payload := SignedPayload(ts, h.Get(HeaderIdempotencyKey), method, target, body)
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, secret)
		mac.Write(payload)
		want := mac.Sum(nil)
		for _, got := range sigs {
			if hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrBadSignature
}
