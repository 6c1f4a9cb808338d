package evals_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/evals"
)

// TestTheSuiteSchemaHasEveryKey: the keys a suite decodes and the keys
// suite.schema.json describes are the same, so neither can gain one alone.
func TestTheSuiteSchemaHasEveryKey(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("suite.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	fromSchema := map[string]bool{}
	schemaKeys(schema, schema, "", fromSchema)
	fromTypes := map[string]bool{}
	yamlKeys("", reflect.TypeOf(evals.Suite{}), fromTypes)
	for k := range fromSchema {
		if !fromTypes[k] {
			t.Errorf("the schema has %s, which a suite does not decode", k)
		}
	}
	for k := range fromTypes {
		if !fromSchema[k] {
			t.Errorf("a suite decodes %s, which the schema lacks", k)
		}
	}
	if len(fromTypes) < 30 {
		t.Fatalf("only %d keys", len(fromTypes))
	}
}

// yamlKeys writes the key paths of t's yaml fields ("cases[].expect[].judge.rubric").
func yamlKeys(prefix string, t reflect.Type, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			key := strings.TrimPrefix(prefix+"."+name, ".")
			out[key] = true
			yamlKeys(key, t.Field(i).Type, out)
		}
	case reflect.Slice:
		yamlKeys(prefix+"[]", t.Elem(), out)
	}
}

// schemaKeys writes the key paths a schema node describes, following $refs.
func schemaKeys(root, node map[string]any, prefix string, out map[string]bool) {
	if ref, ok := node["$ref"].(string); ok {
		def := root["$defs"].(map[string]any)[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		schemaKeys(root, def, prefix, out)
		return
	}
	if props, ok := node["properties"].(map[string]any); ok {
		for name, sub := range props {
			key := strings.TrimPrefix(prefix+"."+name, ".")
			out[key] = true
			schemaKeys(root, sub.(map[string]any), key, out)
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		schemaKeys(root, items, prefix+"[]", out)
	}
}

// TestAValidatorTurnlogDidNotWriteReadsSuites: Python's jsonschema, reading the
// schema and each suite with PyYAML, finds the demo's suite and the one
// docs/evals.md shows valid and refuses what
// DecodeSuite refuses: a check of two things or of nothing, a case without input or
// with both, an unknown key, a judge without a rubric, an answer other than yes or no.
func TestAValidatorTurnlogDidNotWriteReadsSuites(t *testing.T) {
	t.Parallel()
	if err := exec.Command("python3", "-c", "import jsonschema, yaml").Run(); err != nil {
		if os.Getenv("TURNLOG_REQUIRE_JSONSCHEMA") != "" {
			t.Fatalf("python3 with jsonschema and yaml is required: %v", err)
		}
		t.Skipf("python3 with jsonschema and yaml: %v", err)
	}
	type item struct {
		Name     string `json:"name"`
		File     string `json:"file,omitempty"`
		Instance any    `json:"instance,omitempty"`
	}
	invalid := map[string]string{
		"two things":      "app: demo\ncases: [{name: a, input: x, expect: [{contains: y, matches: z}]}]",
		"nothing":         "app: demo\ncases: [{name: a, input: x, expect: [{}]}]",
		"no input":        "app: demo\ncases: [{name: a}]",
		"both inputs":     "app: demo\ncases: [{name: a, input: x, inputs: [y]}]",
		"unknown key":     "app: demo\ncases: [{name: a, input: x, expect: [{contain: y}]}]",
		"judge no rubric": "app: demo\ncases: [{name: a, input: x, expect: [{judge: {llm: m}}]}]",
		"maybe":           "app: demo\ncases: [{name: a, input: x, approve: [{tool: t, answer: maybe}]}]",
		"no files":        "app: demo\ncases: [{name: a, input: x, expect: [{files_changed: []}]}]",
	}
	dir := t.TempDir()
	// docs/evals.md's suite, which shows every key.
	doc, err := os.ReadFile("../docs/evals.md")
	if err != nil {
		t.Fatal(err)
	}
	_, shown, found := strings.Cut(string(doc), "```yaml\nname: demo")
	shown, _, _ = strings.Cut(shown, "```")
	if !found {
		t.Fatal("docs/evals.md shows no suite")
	}
	shown = "name: demo" + shown
	if _, err := evals.DecodeSuite([]byte(shown)); err != nil {
		t.Fatalf("docs/evals.md's suite: %v", err)
	}
	os.WriteFile(dir+"/docs.yaml", []byte(shown), 0o600)
	items := []item{{Name: "demo", File: "../examples/demo/eval.yaml"}, {Name: "docs", File: dir + "/docs.yaml"}}
	for name, src := range invalid {
		if _, err := evals.DecodeSuite([]byte(src)); err == nil {
			t.Errorf("%s: DecodeSuite takes it", name)
		}
		file := dir + "/" + strings.ReplaceAll(name, " ", "-") + ".yaml"
		os.WriteFile(file, []byte(src), 0o600)
		items = append(items, item{Name: name, File: file})
	}
	in, _ := json.Marshal(items)
	cmd := exec.Command("python3", "../config/testdata/validate.py", "suite.schema.json")
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("validate.py: %v", err)
	}
	var verdicts []struct {
		Name   string   `json:"name"`
		Valid  bool     `json:"valid"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(items) {
		t.Fatalf("%s: %v", out, err)
	}
	for _, v := range verdicts {
		if want := v.Name == "demo" || v.Name == "docs"; v.Valid != want {
			t.Errorf("%s: jsonschema says valid=%v %v", v.Name, v.Valid, v.Errors)
		}
	}
}
