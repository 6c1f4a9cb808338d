package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/projection"
	"github.com/turnlog/turnlog/sandbox"
)

// TestTheSchemaHasEveryKeyOfTheConfigTypes: the keys the loader's types decode and
// the keys the schema describes are the same, so a key cannot be added to one alone.
func TestTheSchemaHasEveryKeyOfTheConfigTypes(t *testing.T) {
	t.Parallel()
	fromTypes := map[string]bool{}
	typeKeys("", reflect.TypeOf(config.File{}), fromTypes)
	fromSchema, err := config.Keys()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range fromSchema {
		if !fromTypes[k] {
			t.Errorf("the schema has %s, which the config types do not decode", k)
		}
		delete(fromTypes, k)
	}
	for k := range fromTypes {
		t.Errorf("the config types decode %s, which the schema lacks", k)
	}
	if len(fromSchema) < 150 {
		t.Fatalf("only %d keys in the schema", len(fromSchema))
	}
}

// typeKeys writes the key paths of t's yaml fields, in config.Keys's notation.
func typeKeys(prefix string, t reflect.Type, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" && opts == "inline" { // its keys are the struct's own
				typeKeys(prefix, f.Type, out)
				continue
			}
			if name == "" || name == "-" {
				continue
			}
			key := strings.TrimPrefix(prefix+"."+name, ".")
			out[key] = true
			typeKeys(key, f.Type, out)
		}
	case reflect.Slice:
		typeKeys(prefix+"[]", t.Elem(), out)
	case reflect.Map:
		if e := t.Elem(); e.Kind() == reflect.Struct || (e.Kind() == reflect.Pointer && e.Elem().Kind() == reflect.Struct) {
			typeKeys(prefix+".NAME", e, out)
		}
	}
}

// TestTheSchemasChoicesAreTheLoaders: every enum of the schema lists exactly what
// the loader knows.
func TestTheSchemasChoicesAreTheLoaders(t *testing.T) {
	t.Parallel()
	var s struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Enum          []string                `json:"enum"`
				Items         struct{ Enum []string } `json:"items"`
				PropertyNames struct{ Enum []string } `json:"propertyNames"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(config.Schema, &s); err != nil {
		t.Fatal(err)
	}
	enum := func(def, prop string) []string {
		p := s.Defs[def].Properties[prop]
		for _, e := range [][]string{p.Enum, p.Items.Enum, p.PropertyNames.Enum} {
			if len(e) > 0 {
				return e
			}
		}
		return nil
	}
	strs := func(vs ...any) []string {
		var out []string
		for _, v := range vs {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	var modes, networks, scopes, levels []any
	for _, m := range policy.Modes {
		modes = append(modes, m)
	}
	for _, n := range policy.Networks {
		networks = append(networks, n)
	}
	for _, sc := range workspacetools.Scopes {
		scopes = append(scopes, sc)
	}
	for l := range 6 {
		levels = append(levels, fmt.Sprintf("L%d", l))
	}
	for _, c := range []struct {
		def, prop string
		want      []string
	}{
		{"policy", "mode", strs(modes...)},
		{"policy", "network", strs(networks...)},
		{"policy", "workspace_scope", strs(scopes...)},
		{"policy", "sandbox", sandbox.Mechanisms},
		{"policy", "git", []string{"read-only", "write"}},
		{"policy_rule", "decision", strs(policy.Allow, policy.Deny, policy.RequireApproval)},
		{"policy_rule", "actions", strs(policy.ActRead, policy.ActWrite, policy.ActExecute, policy.ActNetwork, policy.ActDelete)},
		{"policy_rule", "max_level", strs(levels...)},
		{"app", "on_busy", fsm.OnBusyModes()},
		{"webhook", "events", projection.WebhookEvents},
		{"guardrail_policy_rule", "action", []string{fsm.PolicyLog, fsm.PolicyRedact, fsm.PolicyBlock, fsm.PolicyReview}},
		{"guardrail_policy_rule", "applies_to", fsm.PolicyTargets},
		{"guardrail", "kind", []string{fsm.GuardrailRegex, fsm.GuardrailMaxLength, fsm.GuardrailLLMJudge}},
		{"tool", "dedupe", []string{config.DedupeIdempotencyKey}},
	} {
		if got := enum(c.def, c.prop); !slices.Equal(sorted(got), sorted(c.want)) {
			t.Errorf("%s.%s: the schema lists %v, the loader knows %v", c.def, c.prop, got, c.want)
		}
	}
	for _, l := range []string{"L6", "l1", "L"} {
		if _, ok := policy.ParseLevel(l); ok {
			t.Errorf("ParseLevel(%q) is a level the schema does not list", l)
		}
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// TestEverySectionsExamplesShowEveryKeyAndValidate: the reference's example column
// comes from the sections' examples, so each key must appear in one, and each
// example must be right by the schema.
func TestEverySectionsExamplesShowEveryKeyAndValidate(t *testing.T) {
	t.Parallel()
	var s struct {
		Defs map[string]struct {
			OneOf      []json.RawMessage `json:"oneOf"`
			Properties map[string]struct {
				Description string `json:"description"`
				Deprecated  bool   `json:"deprecated"`
			} `json:"properties"`
			Examples []any `json:"examples"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(config.Schema, &s); err != nil {
		t.Fatal(err)
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(config.Schema))
	if err != nil {
		t.Fatal(err)
	}
	c := validator.NewCompiler()
	if err := c.AddResource("turnlog:agent.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range config.Sections {
		def := s.Defs[name]
		if len(def.Examples) == 0 {
			t.Errorf("%s has no example", name)
			continue
		}
		compiled, err := c.Compile("turnlog:agent.schema.json#/$defs/" + name)
		if err != nil {
			t.Fatal(err)
		}
		shown := map[string]bool{}
		for i, ex := range def.Examples {
			raw, _ := json.Marshal(ex)
			v, _ := validator.UnmarshalJSON(bytes.NewReader(raw))
			if err := compiled.Validate(v); err != nil {
				t.Errorf("%s's example %d does not validate: %v", name, i, err)
			}
			if m, ok := ex.(map[string]any); ok {
				for k := range m {
					shown[k] = true
				}
			}
		}
		for k, p := range def.Properties {
			if !shown[k] && !p.Deprecated && !strings.HasPrefix(p.Description, "Refused") {
				t.Errorf("no example of %s shows %s", name, k)
			}
		}
	}
}

// TestOldSpellingsNameTheirKey: a key kept under its old name says which key it
// became, and that key is beside it.
func TestOldSpellingsNameTheirKey(t *testing.T) {
	t.Parallel()
	var s struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Description string `json:"description"`
				Deprecated  bool   `json:"deprecated"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(config.Schema, &s); err != nil {
		t.Fatal(err)
	}
	old := 0
	for dn, d := range s.Defs {
		for k, p := range d.Properties {
			if !p.Deprecated {
				continue
			}
			old++
			var now string
			if _, err := fmt.Sscanf(p.Description, "Old spelling of %s", &now); err != nil {
				t.Errorf("%s.%s is an old spelling whose description does not say of what: %q", dn, k, p.Description)
				continue
			}
			now = strings.TrimRight(now, ",.")
			if _, ok := d.Properties[now]; !ok {
				t.Errorf("%s.%s is the old spelling of %s, which %s lacks", dn, k, now, dn)
			}
		}
	}
	if old == 0 {
		t.Fatal("no old spelling: mcp_server.timeout_seconds is one")
	}
}

// TestDecodeReportsEveryProblemWithItsLine: a config with several mistakes gets them
// all at once, each with its line, in the file's order.
func TestDecodeReportsEveryProblemWithItsLine(t *testing.T) {
	t.Parallel()
	src := `apps:
  shop:
    start_agent: clerk
    llms:
      m: {provider: scripted, temprature: 1}
    agents:
      clerk:
        llm: m
        max_turns: many
        memory: {embedings: {model: x}}
        tools: [lookup, {name: ask}]
    retention: soon
`
	_, err := config.Decode("agent.yaml", []byte(src))
	var es config.Errors
	if !errors.As(err, &es) {
		t.Fatalf("err = %v, want config.Errors", err)
	}
	want := []string{
		"agent.yaml:5: apps.shop.llms.m.temprature: is not a known key here",
		"agent.yaml:9: apps.shop.agents.clerk.max_turns: is a string, want an integer",
		"agent.yaml:10: apps.shop.agents.clerk.memory.embedings: is not a known key here",
		"agent.yaml:11: apps.shop.agents.clerk.tools[1].agent: is required",
		"agent.yaml:12: apps.shop.retention: must be a positive duration",
	}
	if len(es) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(es), len(want), err)
	}
	lines := strings.Split(err.Error(), "\n")
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d does not start %q:\n%s", i, w, err)
		}
	}
	var one *config.Error
	if !errors.As(err, &one) || one.Line != 5 {
		t.Errorf("errors.As finds %+v, want the first problem (line 5)", one)
	}
}

// TestTheConfigReferenceIsCurrent: docs/config.md's reference is what
// config.Reference writes from the schema (make config-docs writes it again).
func TestTheConfigReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	want, err := config.Reference()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), config.ReferenceStart+"\n")
	got, _, ok2 := strings.Cut(after, config.ReferenceEnd)
	if !ok || !ok2 {
		t.Fatalf("docs/config.md lacks the markers %q and %q", config.ReferenceStart, config.ReferenceEnd)
	}
	if got != want {
		t.Errorf("docs/config.md's reference is not the schema's: run make config-docs")
	}
}

// TestEveryExampleAndFixtureNamesTheSchema: each config in the repository starts with
// the modeline that gives editors the schema, and the path resolves to it.
func TestEveryExampleAndFixtureNamesTheSchema(t *testing.T) {
	t.Parallel()
	files := repositoryConfigs(t)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(raw), "\n")
		rel, ok := strings.CutPrefix(first, "# yaml-language-server: $schema=")
		if !ok {
			t.Errorf("%s does not start with a yaml-language-server modeline", f)
			continue
		}
		got, err := os.ReadFile(filepath.Join(filepath.Dir(f), rel))
		if err != nil || !bytes.Equal(got, config.Schema) {
			t.Errorf("%s's modeline names %s, which is not the schema (%v)", f, rel, err)
		}
		if _, err := config.Decode(f, raw); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// repositoryConfigs are the agent.yaml files of examples/ and fixtures/.
func repositoryConfigs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, root := range []string{"../examples", "../fixtures"} {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
				return err
			}
			raw, err := os.ReadFile(p)
			if err == nil && bytes.Contains(raw, []byte("\napps:")) || bytes.HasPrefix(raw, []byte("apps:")) {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 25 {
		t.Fatalf("only %d configs found", len(files))
	}
	return files
}

// TestAValidatorTurnlogDidNotWriteAgrees: Python's jsonschema, reading the schema
// file, accepts every example and fixture (parsing the YAML itself), and on hundreds
// of configs made from them — an unknown key in each mapping, a value of the wrong
// type at each key — says exactly what turnlog's loader says: valid or not.
func TestAValidatorTurnlogDidNotWriteAgrees(t *testing.T) {
	t.Parallel()
	if err := exec.Command("python3", "-c", "import jsonschema, yaml").Run(); err != nil {
		if os.Getenv("TURNLOG_REQUIRE_JSONSCHEMA") != "" {
			t.Fatalf("python3 with jsonschema and yaml is required: %v", err)
		}
		t.Skipf("python3 with jsonschema and yaml: %v", err)
	}
	type pyCase struct {
		Name     string `json:"name"`
		File     string `json:"file,omitempty"`
		Instance any    `json:"instance,omitempty"`
	}
	var cases []pyCase
	loaderValid := map[string]bool{}
	for _, f := range repositoryConfigs(t) {
		abs, _ := filepath.Abs(f)
		cases = append(cases, pyCase{Name: f, File: abs})
		loaderValid[f] = true
		raw, _ := os.ReadFile(f)
		var v any
		if err := yaml.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		for i, m := range mutations(v) {
			name := fmt.Sprintf("%s#%d %s", f, i, m.what)
			js, err := json.Marshal(m.value)
			if err != nil {
				t.Fatal(err)
			}
			_, err = config.Decode(f, js) // JSON is YAML
			loaderValid[name] = err == nil
			if m.mustFail && err == nil {
				t.Errorf("%s: the loader accepts it", name)
			}
			cases = append(cases, pyCase{Name: name, Instance: m.value})
		}
	}
	in, _ := json.Marshal(cases)
	cmd := exec.Command("python3", "testdata/validate.py", "agent.schema.json")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("validate.py: %v\n%s", err, stderr.String())
	}
	var verdicts []struct {
		Name   string
		Valid  bool
		Errors []string
	}
	if err := json.Unmarshal(out, &verdicts); err != nil {
		t.Fatal(err)
	}
	if len(verdicts) != len(cases) || len(cases) < 500 {
		t.Fatalf("%d verdicts for %d cases", len(verdicts), len(cases))
	}
	refused := 0
	for _, v := range verdicts {
		if v.Valid != loaderValid[v.Name] {
			t.Errorf("%s: jsonschema says valid=%v %v, the loader valid=%v", v.Name, v.Valid, v.Errors, loaderValid[v.Name])
		}
		if !v.Valid {
			refused++
		}
	}
	t.Logf("%d configs, %d refused by both", len(cases), refused)
}

// mutation is a config changed in one place.
type mutation struct {
	what     string
	value    any
	mustFail bool
}

// freeForm are keys whose values the schema leaves open (a tool's JSON schema, a
// model's settings).
var freeForm = []string{"parameters", "settings", "examples"}

// mutations change v in one place each: an unknown key added to a mapping (or, to a
// mapping of names, an entry that is no section), or a value swapped for one of
// another type — wrong, but for a string an argument or header value may be.
func mutations(v any) []mutation {
	var out []mutation
	var walk func(path []any)
	walk = func(path []any) {
		cur := at(v, path)
		switch x := cur.(type) {
		case map[string]any:
			parentKey := ""
			if len(path) > 0 {
				parentKey, _ = path[len(path)-1].(string)
			}
			if !slices.Contains(freeForm, parentKey) { // a key of no section, or an entry of the wrong type
				out = append(out, mutation{fmt.Sprintf("%v + unknown key", path), with(v, append(slices.Clone(path), "zz_not_a_key"), 1), true})
			}
			for k := range x {
				if slices.Contains(freeForm, k) {
					continue
				}
				walk(append(slices.Clone(path), k))
			}
		case []any:
			for i := range x {
				walk(append(slices.Clone(path), i))
			}
		case string:
			// An argument or a header value takes a number as its text: the verdicts are
			// compared, whatever they are.
			out = append(out, mutation{fmt.Sprintf("%v string → number", path), with(v, path, 12345), false})
		case bool:
			out = append(out, mutation{fmt.Sprintf("%v boolean → string", path), with(v, path, "maybe"), true})
		case int, int64, uint64, float64:
			out = append(out, mutation{fmt.Sprintf("%v number → string", path), with(v, path, "many"), true})
		}
	}
	walk(nil)
	return out
}

func at(v any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

// with is a deep copy of v with the value at path set to x.
func with(v any, path []any, x any) any {
	if len(path) == 0 {
		return x
	}
	switch c := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(c)+1)
		for k, e := range c {
			out[k] = e
		}
		k := path[0].(string)
		out[k] = with(c[k], path[1:], x)
		return out
	case []any:
		out := slices.Clone(c)
		i := path[0].(int)
		out[i] = with(c[i], path[1:], x)
		return out
	}
	return x
}

// TestMistakesGetAHint: a misspelt key is told the key it is closest to, a duration
// written as a bare number is told it needs its unit, and several unknown keys of one
// mapping are each a problem of their own.
func TestMistakesGetAHint(t *testing.T) {
	t.Parallel()
	src := `apps:
  shop:
    start_agent: clerk
    tools:
      t: {function: x, show_erors: true, timeout: 10, colour: red}
    agents:
      clerk: {llm: m, guardrails: {inputs: []}}
`
	_, err := config.Decode("agent.yaml", []byte(src))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"agent.yaml:5: apps.shop.tools.t.show_erors: is not a known key here: did you mean show_errors?",
		"agent.yaml:5: apps.shop.tools.t.timeout: is a number, want a duration with its unit, such as 30s, 10m or 1h30m",
		"agent.yaml:5: apps.shop.tools.t.colour: is not a known key here (docs/config.md lists them)",
		"agent.yaml:7: apps.shop.agents.clerk.guardrails.inputs: is not a known key here: did you mean input?",
	} {
		if !strings.Contains(err.Error()+"\n", want+"\n") {
			t.Errorf("the problems do not say %q:\n%v", want, err)
		}
	}
}

// TestWhatYAMLReadsAsNumbersIsText: an argument or a header value YAML reads as a
// number or a boolean is taken as its text (as the loader always took it); an empty
// key is told it has no value.
func TestWhatYAMLReadsAsNumbersIsText(t *testing.T) {
	t.Parallel()
	good := `apps:
  a:
    start_agent: x
    agents: {x: {llm: m}}
    tools:
      wait: {command: [sleep, 5], description: waits, env: [LANG]}
      api: {url: "http://127.0.0.1:1/", description: calls, headers: {X-Api-Version: 2, X-Beta: true}}
    mcp:
      servers:
        s: {command: [node, srv.js, --port, 3000], timeout: 5s, timeout_seconds: 0}
`
	if _, err := config.Decode("agent.yaml", []byte(good)); err != nil {
		t.Fatal(err)
	}
	empty := "apps:\n  a:\n    start_agent: x\n    agents: {x: {llm: m, handoffs: }}\n"
	if _, err := config.Decode("agent.yaml", []byte(empty)); err == nil || !strings.Contains(err.Error(), "apps.a.agents.x.handoffs: has no value: give it a list, or leave the key out") {
		t.Fatalf("an empty key: %v", err)
	}
}
