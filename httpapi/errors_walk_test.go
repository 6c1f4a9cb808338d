package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// wordsNoErrorSays are what would show a client turnlog's insides: Go types and
// packages, encoding/json's own words, SQL and its drivers, source paths.
var wordsNoErrorSays = []string{"httpapi.", "fsm.", "events.", "projection.", "json:", "Go value", "Go struct", "struct",
	"SQL", "sqlite", "constraint", "pq:", "pgx", ".go:", "map[", "[]", "0x", "runtime", "interface {", "/work/", "/tmp/"}

// TestEveryErrorTellsTheTruth walks every route the server has: with every other
// method (405 with Allow naming the route's methods), with each id too long (400
// naming the parameter, the id never echoed whole), and, for routes that take a
// body, with bodies of every wrong shape (4xx). Every answer has the error shape,
// a code that matches its status, and no message shows turnlog's insides.
func TestEveryErrorTellsTheTruth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "demo")
	turn := b.do(t, "POST", "/v1/sessions/"+id+"/turns", "key-alice", `{"input":"hello"}`)
	turnID, _ := turn.body["turn_id"].(string)
	values := map[string]string{":id": id, ":turn_id": turnID, ":delivery_id": "nope", ":user_id": "bob"}
	long := strings.Repeat("z", 300)
	bodies := []string{`[1]`, `"x"`, `1`, `null`, `true`, `{"zz":1}`, `{`, `{"input":{"a":1}}`, `{"app":[1]}`, `{"metadata":1}`,
		`{"resume_map":[1]}`, `{"resume_map":{"x":1}}`, `{"resume_map":{"x":{"confirmed":"yes"}}}`, `{"at_seq":"x"}`, `{"reason":1}`,
		`{"input":"a\u0000b"}`, `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`}
	check := func(what string, r response) {
		t.Helper()
		code, msg := r.errorCode(), r.errorMessage()
		if code == "" || msg == "" {
			t.Errorf("%s: %d %s: not the error shape", what, r.status, r.raw)
			return
		}
		if want := map[int]string{400: "invalid", 404: "not_found", 405: "method_not_allowed", 409: "conflict", 413: "too_large", 415: "unsupported_media_type", 422: "idempotency_mismatch"}[r.status]; want != "" && code != want {
			t.Errorf("%s: status %d with code %s, want %s", what, r.status, code, want)
		}
		for _, w := range wordsNoErrorSays {
			if strings.Contains(msg, w) {
				t.Errorf("%s: the message %q shows %q", what, msg, w)
			}
		}
		if strings.Contains(msg, long) {
			t.Errorf("%s: the message echoes a %d-byte id whole", what, len(long))
		}
	}
	routes := 0
	for _, rt := range b.api.Echo().Routes() {
		if strings.Contains(rt.Path, "*") || rt.Method == echo.RouteNotFound || !strings.HasPrefix(rt.Path, "/v1/") {
			continue
		}
		routes++
		segs := strings.Split(rt.Path, "/")
		path := func(longParam string) string {
			out := slices.Clone(segs)
			for i, s := range out {
				if v, ok := values[s]; ok {
					out[i] = v
					if s == longParam {
						out[i] = long
					}
				}
			}
			return strings.Join(out, "/")
		}
		var methods []string
		for _, other := range b.api.Echo().Routes() {
			if other.Path == rt.Path {
				methods = append(methods, other.Method)
			}
		}
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if slices.Contains(methods, m) {
				continue
			}
			r := b.do(t, m, path(""), "key-root", "")
			check(m+" "+rt.Path, r)
			allow := r.header.Get("Allow")
			if r.status != http.StatusMethodNotAllowed || !containsAll(allow, methods) {
				t.Errorf("%s %s: %d (Allow %q), want 405 allowing %v", m, rt.Path, r.status, allow, methods)
			}
		}
		for _, s := range segs {
			if _, ok := values[s]; !ok {
				continue
			}
			r := b.do(t, rt.Method, path(s), "key-root", "")
			check(rt.Method+" "+rt.Path+" with a long "+s, r)
			if r.status != http.StatusBadRequest || !strings.HasPrefix(r.errorMessage(), strings.TrimPrefix(s, ":")) {
				t.Errorf("%s %s with a %d-byte %s: %d %s, want 400 naming it", rt.Method, rt.Path, len(long), s, r.status, r.raw)
			}
		}
		if rt.Method != "POST" {
			continue
		}
		for _, body := range bodies {
			r := b.do(t, rt.Method, path(""), "key-root", body)
			if r.status < 400 {
				continue // a body this route reads past (cancel's reason, compact's none)
			}
			check(rt.Method+" "+rt.Path+" "+body, r)
			if r.status >= 500 {
				t.Errorf("%s %s %s: %d %s", rt.Method, rt.Path, body, r.status, r.raw)
			}
		}
	}
	if routes < 20 {
		t.Fatalf("walked %d routes", routes)
	}
	// Outside /v1 too: another method of a known path is 405 with Allow.
	for _, path := range []string{"/healthz", "/readyz", "/openapi.yaml"} {
		r := b.do(t, "PUT", path, "", "")
		if r.status != http.StatusMethodNotAllowed || !strings.Contains(r.header.Get("Allow"), "GET") {
			t.Errorf("PUT %s: %d (Allow %q), want 405 allowing GET", path, r.status, r.header.Get("Allow"))
		}
	}
	// A path that names nothing is 404 for every method.
	for _, m := range []string{"GET", "PUT"} {
		if r := b.do(t, m, "/v1/nothing/here", "key-alice", ""); r.status != http.StatusNotFound {
			t.Errorf("%s of an unknown path: %d %s", m, r.status, r.raw)
		}
	}
}

func containsAll(allow string, methods []string) bool {
	for _, m := range methods {
		if !strings.Contains(allow, m) {
			return false
		}
	}
	return allow != ""
}
