package events_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
)

func TestCanonicalizeRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
	}{
		{"keys sorted", `{"b":1,"a":2,"c":{"z":1,"y":2}}`, `{"a":2,"b":1,"c":{"y":2,"z":1}}`},
		{"whitespace removed", " { \"a\" : [ 1 , 2 ] ,\n\t\"b\" : null } ", `{"a":[1,2],"b":null}`},
		{"integral float as integer", `{"x":164.0}`, `{"x":164}`},
		{"exponent integral", `1e3`, `1000`},
		{"negative zero", `-0.0`, `0`},
		{"negative integer zero", `-0`, `0`},
		{"fraction kept", `0.5`, `0.5`},
		{"small float", `1.5e-7`, `1.5e-7`},
		{"largest exact integer", `9007199254740992`, `9007199254740992`},
		{"smallest exact integer", `-9007199254740992`, `-9007199254740992`},
		{"unicode unescaped", `"caf\u00e9 <b>"`, `"café <b>"`},
		{"control escaped", "\"a\\u0001b\"", `"a\u0001b"`},
		{"array order kept", `[3,1,2]`, `[3,1,2]`},
		{"booleans", `[true,false]`, `[true,false]`},
		{"key sort is bytewise", `{"b":1,"B":2,"é":3}`, `{"B":2,"b":1,"é":3}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := events.Canonicalize([]byte(tc.in))
			if err != nil {
				t.Fatalf("Canonicalize(%s): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Fatalf("Canonicalize(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestCanonicalizeRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, path, reason string
	}{
		{"integer beyond 2^53", `{"order":{"id":9007199254740993}}`, "$.order.id", "beyond ±2^53"},
		{"negative integer beyond 2^53", `[1,-9007199254740993]`, "$[1]", "beyond ±2^53"},
		{"integral float beyond 2^53", `{"n":1e300}`, "$.n", "beyond ±2^53"},
		{"overflow to inf", `{"n":1e400}`, "$.n", "not a finite double"},
		{"duplicate key", `{"a":1,"a":2}`, "$.a", "duplicate key"},
		{"odd key path", `{"a b":{"c":1,"c":1}}`, `$["a b"].c`, "duplicate key"},
		{"malformed", `{"a":}`, "$.a", "malformed JSON"},
		{"trailing data", `{} {}`, "$", "trailing data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := events.Canonicalize([]byte(tc.in))
			var ce *events.CanonicalError
			if !errors.As(err, &ce) {
				t.Fatalf("Canonicalize(%s) error = %v, want *CanonicalError", tc.in, err)
			}
			if ce.Path != tc.path || !strings.Contains(ce.Reason, tc.reason) {
				t.Fatalf("error = %v, want path %s and reason containing %q", ce, tc.path, tc.reason)
			}
		})
	}
}

func TestMarshalRefusesNonFiniteNamingTheField(t *testing.T) {
	t.Parallel()
	type inner struct {
		Amount float64 `json:"amount"`
	}
	type outer struct {
		Lines []inner `json:"lines"`
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := events.Marshal(outer{Lines: []inner{{1}, {f}}})
		var ce *events.CanonicalError
		if !errors.As(err, &ce) {
			t.Fatalf("Marshal(%v) error = %v, want *CanonicalError", f, err)
		}
		if got, want := ce.Path, "$.lines[1].amount"; got != want {
			t.Fatalf("path = %s, want %s", got, want)
		}
	}
}

func TestMarshalSortsStructFields(t *testing.T) {
	t.Parallel()
	got, err := events.Marshal(struct {
		Z int     `json:"z"`
		A float64 `json:"a"`
	}{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":2,"z":1}`; string(got) != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
}

func BenchmarkCanonicalize(b *testing.B) {
	in := []byte(`{"agent":"support","llm":"scripted","new_items":[{"agent":"support","arguments":{"order_id":1001},"call_id":"call_1_1","name":"lookup_order","type":"function_call"},{"call_id":"call_1_1","output":"{\"carrier\":\"UPS\",\"eta\":\"2026-11-20\"}","type":"function_call_output"}],"parts":{"instructions":"f80ce78b1a87e942","items":3,"settings":"44136fa355b3678a","tools":"e66c630d6fce11f9"},"request_hash":"46db9377fec6421b1946f50c62474e40a419f88bddd2e2b82195b3b1b83cc69c","response":{"text":"Order 1001 is delivered."},"usage":{"input_tokens":30,"output_tokens":7}}`)
	b.SetBytes(int64(len(in)))
	for i := 0; i < b.N; i++ {
		if _, err := events.Canonicalize(in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCheckStrict: keys match fields case-sensitively, strings hold valid UTF-8 and
// no lone surrogate — in request bodies and in fixtures alike.
func TestCheckStrict(t *testing.T) {
	t.Parallel()
	type answer struct {
		Confirmed bool            `json:"confirmed"`
		Args      json.RawMessage `json:"arguments"`
	}
	type body struct {
		Input   string            `json:"input"`
		Answers map[string]answer `json:"resume_map"`
		List    []answer          `json:"list"`
	}
	for raw, want := range map[string]string{
		`{"input":"x","resume_map":{"a":{"confirmed":true,"arguments":{"ANY":"Case"}}},"list":[{"confirmed":false}]}`: "",
		`{"Input":"x"}`: `Input: unknown field "Input": field names are case-sensitive ("input" is one)`,
		`{"resume_map":{"a":{"Confirmed":true}}}`:       "resume_map.a.Confirmed",
		`{"list":[{"confirmed":true},{"CONFIRMED":1}]}`: "list[1].CONFIRMED",
		`{"input":"\udc00"}`:                            "input: holds a lone UTF-16 surrogate",
		`{"input":"\ud800x"}`:                           "input: holds a lone UTF-16 surrogate",
		`{"input":"\ud83d\ude00 fine"}`:                 "",
		"{\"input\":\"\xc3\x28\"}":                      "input: holds invalid UTF-8",
		`{"resume_map":{"\ud800":{"confirmed":true}}}`:  "lone UTF-16 surrogate",
		`{"unknown":{"Whatever":1},"input":"\\ud800"}`:  "",
	} {
		err := events.CheckStrict([]byte(raw), &body{})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
	for _, line := range []string{
		`{"session":"s","seq":1,"Type":"SessionCreated","data":{}}`,
		`{"session":"s","seq":1,"type":"SessionCreated","v":1,"data":{"App":"demo","owner":"a"}}`,
	} {
		_, err := events.ReadJSONL(strings.NewReader(line+"\n"), "f.jsonl")
		if err == nil || !strings.Contains(err.Error(), "f.jsonl:1") {
			t.Fatalf("a fixture line with a key in the wrong case (%s): %v", line, err)
		}
	}
}
