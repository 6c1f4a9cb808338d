package client_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// conformance wraps the API: every answer is checked against the schema
// /openapi.yaml gives for its operation and status, and every operation answered is
// counted.
type conformance struct {
	next     http.Handler
	compiler *jsonschema.Compiler
	doc      map[string]any
	ops      []operation
	mu       sync.Mutex
	schemas  map[string]*jsonschema.Schema
	seen     map[string]bool
	problems []string
}

type operation struct {
	method, template string
	re               *regexp.Regexp
}

func newConformance(t *testing.T, next http.Handler, spec []byte) *conformance {
	t.Helper()
	raw, err := yaml.YAMLToJSON(spec)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	v := &conformance{next: next, compiler: c, doc: doc.(map[string]any), schemas: map[string]*jsonschema.Schema{}, seen: map[string]bool{}}
	for template, item := range v.doc["paths"].(map[string]any) {
		pattern := "^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(template), `[^/]+`) + "$"
		for method := range item.(map[string]any) {
			v.ops = append(v.ops, operation{strings.ToUpper(method), template, regexp.MustCompile(pattern)})
		}
	}
	return v
}

func (v *conformance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &tee{ResponseWriter: w, Code: http.StatusOK}
	v.next.ServeHTTP(rec, r)
	var op *operation
	for i := range v.ops {
		if v.ops[i].method == r.Method && v.ops[i].re.MatchString(r.URL.Path) {
			op = &v.ops[i]
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if op == nil {
		v.problems = append(v.problems, fmt.Sprintf("%s %s: no operation documents it", r.Method, r.URL.Path))
		return
	}
	key := op.method + " " + op.template
	if rec.Code >= 200 && rec.Code < 300 {
		v.seen[key] = true
	}
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		return
	}
	status := strconv.Itoa(rec.Code)
	responses := v.doc["paths"].(map[string]any)[op.template].(map[string]any)[strings.ToLower(op.method)].(map[string]any)["responses"].(map[string]any)
	loc := ""
	for _, s := range []string{status, status[:1] + "XX", "default"} {
		if resp, ok := responses[s].(map[string]any); ok {
			if ref, ok := resp["$ref"].(string); ok {
				loc = ref + "/content/application~1json/schema"
			} else if content, _ := resp["content"].(map[string]any); content["application/json"] != nil {
				loc = "#/paths/" + pointer(op.template) + "/" + strings.ToLower(op.method) + "/responses/" + s + "/content/application~1json/schema"
			} else {
				v.problems = append(v.problems, fmt.Sprintf("%s %d: JSON that the description does not give", key, rec.Code))
				return
			}
			break
		}
	}
	if loc == "" {
		v.problems = append(v.problems, fmt.Sprintf("%s: status %d is not documented", key, rec.Code))
		return
	}
	sch, ok := v.schemas[loc]
	if !ok {
		var err error
		if sch, err = v.compiler.Compile("openapi.json" + loc); err != nil {
			v.problems = append(v.problems, fmt.Sprintf("%s: compile %s: %v", key, loc, err))
			return
		}
		v.schemas[loc] = sch
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes()))
	if err == nil {
		err = sch.Validate(inst)
	}
	if err != nil {
		v.problems = append(v.problems, fmt.Sprintf("%s %d: the answer does not match its schema: %v\n%s", key, rec.Code, err, rec.Body.String()))
	}
}

// tee passes an answer through as it is written (streams too) and keeps a copy.
type tee struct {
	http.ResponseWriter
	Code int
	Body bytes.Buffer
}

func (t *tee) WriteHeader(code int) { t.Code = code; t.ResponseWriter.WriteHeader(code) }
func (t *tee) Write(p []byte) (int, error) {
	t.Body.Write(p)
	return t.ResponseWriter.Write(p)
}
func (t *tee) Flush()                      { t.ResponseWriter.(http.Flusher).Flush() }
func (t *tee) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// pointer escapes a path template as a JSON pointer token.
func pointer(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }

// check fails the test with every answer that did not match, and every operation
// that was never answered with success.
func (v *conformance) check(t *testing.T) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range v.problems {
		t.Error(p)
	}
	var missing []string
	for _, op := range v.ops {
		if key := op.method + " " + op.template; !v.seen[key] {
			missing = append(missing, key)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("operations the client never called with success: %v", missing)
	}
}

// mustJSON is a JSON literal.
func mustJSON(s string) json.RawMessage { return json.RawMessage(s) }
