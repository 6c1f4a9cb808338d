package inspector_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
)

// argumentsCase is an edit and a tool's schema; known says the page's check covers
// the keywords it breaks, so it must refuse it as the server does.
type argumentsCase struct {
	schema, args string
	known        bool
}

var argumentsCases = []argumentsCase{
	{`{"type":"object","properties":{"order_id":{"type":"integer","minimum":1}},"required":["order_id"]}`, `{"order_id": 7}`, true},
	{`{"type":"object","properties":{"order_id":{"type":"integer","minimum":1}},"required":["order_id"]}`, `{"order_id": 0}`, true},
	{`{"type":"object","properties":{"order_id":{"type":"integer","minimum":1}},"required":["order_id"]}`, `{}`, true},
	{`{"type":"object","properties":{"order_id":{"type":"integer"}}}`, `{"order_id": 1.5}`, true},
	{`{"type":"object","properties":{"order_id":{"type":"integer"}}}`, `{"order_id": 2.0}`, true},
	{`{"type":"object","properties":{"order_id":{"type":"integer"}}}`, `{"order_id": "7"}`, true},
	{`{"type":"object","properties":{"n":{"type":"number","exclusiveMaximum":10}}}`, `{"n": 10}`, true},
	{`{"type":"object","properties":{"n":{"type":"number","maximum":10}}}`, `{"n": 10}`, true},
	{`{"type":"object","properties":{"n":{"type":"number","multipleOf":0.5}}}`, `{"n": 1.25}`, true},
	{`{"type":"object","properties":{"n":{"type":"number","multipleOf":0.5}}}`, `{"n": 1.5}`, true},
	{`{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":3}}}`, `{"s": "é"}`, true},
	{`{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}`, `{"s": "日本語"}`, true},
	{`{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}`, `{"s": "日本語!"}`, true},
	{`{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-z]+$"}}}`, `{"s": "abc"}`, true},
	{`{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-z]+$"}}}`, `{"s": "ab1"}`, true},
	{`{"type":"object","properties":{"c":{"enum":["EUR","USD"]}}}`, `{"c": "GBP"}`, true},
	{`{"type":"object","properties":{"c":{"const":{"a":[1,2]}}}}`, `{"c": {"a":[1,2]}}`, true},
	{`{"type":"object","properties":{"c":{"const":{"a":[1,2]}}}}`, `{"c": {"a":[2,1]}}`, true},
	{`{"type":"object","additionalProperties":false,"properties":{"a":{}}}`, `{"a": 1, "b": 2}`, true},
	{`{"type":"object","additionalProperties":{"type":"string"}}`, `{"a": "x", "b": 2}`, true},
	{`{"type":"object","patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false}`, `{"x-a": 1}`, true},
	{`{"type":"object","patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false}`, `{"x-a": "no"}`, true},
	{`{"type":"object","patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false}`, `{"y": 1}`, true},
	{`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]}}}}`, `{"items": [{"sku": "a"}, {}]}`, true},
	{`{"type":"object","properties":{"items":{"type":"array","minItems":1,"maxItems":2,"uniqueItems":true}}}`, `{"items": []}`, true},
	{`{"type":"object","properties":{"items":{"type":"array","maxItems":2}}}`, `{"items": [1,2,3]}`, true},
	{`{"type":"object","properties":{"items":{"type":"array","uniqueItems":true}}}`, `{"items": [{"a":1},{"a":1}]}`, true},
	{`{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}}}`, `{"t": ["a", "b"]}`, true},
	{`{"type":"object","properties":{"v":{"type":["string","null"]}}}`, `{"v": null}`, true},
	{`{"type":"object","properties":{"v":{"type":["string","null"]}}}`, `{"v": 3}`, true},
	{`{"type":"object","minProperties":1}`, `{}`, true},
	{`{"type":"object","maxProperties":1}`, `{"a":1,"b":2}`, true},
	{`{"type":"object","properties":{"a":{"allOf":[{"type":"integer"},{"minimum":3}]}}}`, `{"a": 2}`, true},
	{`{"type":"object","properties":{"a":{"anyOf":[{"type":"integer"},{"type":"string"}]}}}`, `{"a": true}`, true},
	{`{"type":"object","properties":{"a":{"oneOf":[{"type":"integer"},{"type":"number"}]}}}`, `{"a": 2}`, true},
	{`{"type":"object","properties":{"a":{"oneOf":[{"type":"integer"},{"type":"string"}]}}}`, `{"a": 2}`, true},
	{`{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`, `{"a": "s"}`, true},
	{`{"type":"object","$defs":{"money":{"type":"object","properties":{"amount":{"type":"number","minimum":0}},"required":["amount"]}},"properties":{"total":{"$ref":"#/$defs/money"}}}`, `{"total": {"amount": -1}}`, true},
	{`{"type":"object","$defs":{"money":{"type":"object","properties":{"amount":{"type":"number","minimum":0}},"required":["amount"]}},"properties":{"total":{"$ref":"#/$defs/money"}}}`, `{"total": {"amount": 3}}`, true},
	{`{"type":"object","properties":{"next":{"$ref":"#"}},"additionalProperties":false}`, `{"next": {"next": {"other": 1}}}`, true},
	{`{"type":"object","properties":{"a":false}}`, `{"a": 1}`, true},
	// Keywords the page leaves to the server: it must not refuse what the server takes.
	{`{"type":"object","properties":{"a":{"type":"string"}},"dependentRequired":{"a":["b"]}}`, `{"a": "x"}`, false},
	{`{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`, `{"a": 1}`, false},
	{`{"type":"object","properties":{"d":{"type":"string","format":"date"}}}`, `{"d": "2026-12-01"}`, false},
	{`{"type":"object","unevaluatedProperties":false,"properties":{"a":{}}}`, `{"a": 1, "b": 2}`, false},
	{`{"type":"object","propertyNames":{"maxLength":2}}`, `{"abc": 1}`, false},
}

// TestPageCheckAgreesWithTheServer: the inspector's check of an edit, run in
// Chromium, against the server's (the schema validator tools use) on a set of
// schemas and edits: it never refuses an edit the server takes, a refusal names the
// field the server names, and it refuses every edit the server refuses when the
// keywords are ones it covers.
func TestPageCheckAgreesWithTheServer(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	ctx := chromium(t)
	s, _ := b.session("alice")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/ui/signin"),
		chromedp.SendKeys(chromedp.ID("key"), "k-alice"),
		chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="Sessions"]`)),
		chromedp.Navigate(b.srv.URL+"/ui/sessions/"+s.ID),
		chromedp.WaitVisible(chromedp.ID("transcript-h"))); err != nil {
		t.Fatal(err)
	}
	const field = "resume_map.q.arguments"
	for i, c := range argumentsCases {
		schema, err := functool.CompileSchema(json.RawMessage(c.schema))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		serverField := ""
		var ae *fsm.ArgumentsError
		if err := schema.Validate(json.RawMessage(c.args)); errors.As(err, &ae) {
			serverField = field + "." + ae.Field
		} else if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		call := fmt.Sprintf(`JSON.stringify(window.turnlogArguments.problem(%q, %q, %q))`, c.args, c.schema, field)
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](call))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		var page *struct{ Field, Message string }
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("case %d: %q: %v", i, out, err)
		}
		switch {
		case serverField == "" && page != nil:
			t.Errorf("case %d: %s against %s: the page refuses (%s: %s) what the server takes", i, c.args, c.schema, page.Field, page.Message)
		case page != nil && page.Field != serverField:
			t.Errorf("case %d: %s against %s: the page names %s, the server %s", i, c.args, c.schema, page.Field, serverField)
		case page == nil && serverField != "" && c.known:
			t.Errorf("case %d: %s against %s: the page takes what the server refuses (%s)", i, c.args, c.schema, serverField)
		}
	}
}
