package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
)

// node is a schema node as the reference reads it.
type node struct {
	Ref         string           `json:"$ref"`
	Type        any              `json:"type"`
	Description string           `json:"description"`
	Required    []string         `json:"required"`
	Properties  map[string]*node `json:"properties"`
	Additional  json.RawMessage  `json:"additionalProperties"`
	Items       *node            `json:"items"`
	Enum        []any            `json:"enum"`
	OneOf       []*node          `json:"oneOf"`
	Default     any              `json:"default"`
	Examples    []any            `json:"examples"`
	Deprecated  bool             `json:"deprecated"`
	Minimum     *json.Number     `json:"minimum"`
	Maximum     *json.Number     `json:"maximum"`
	Defs        map[string]*node `json:"$defs"`
	order       []string         // the properties in the schema's order
}

// Sections are the schema's definitions in the order the reference shows them.
var Sections = []string{"app", "app_budgets", "llm", "price", "scripted_rule", "tool", "agent", "budgets", "budget_limit", "tool_ref", "handoff", "guardrail", "context",
	"embeddings", "policy", "policy_rule", "mcp", "mcp_server", "webhook", "guardrail_policy_rule"}

// parseSchema reads Schema with every object's properties in the file's order.
func parseSchema() (*node, error) {
	var root node
	if err := json.Unmarshal(Schema, &root); err != nil {
		return nil, err
	}
	if err := orderProperties(Schema, &root); err != nil {
		return nil, err
	}
	return &root, nil
}

// orderProperties records, for n and every node under it, its properties' order in raw.
func orderProperties(raw []byte, n *node) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil // not an object: no properties
	}
	if props, ok := fields["properties"]; ok {
		keys, err := objectKeys(props)
		if err != nil {
			return err
		}
		n.order = keys
		var sub map[string]json.RawMessage
		_ = json.Unmarshal(props, &sub)
		for _, k := range keys {
			if err := orderProperties(sub[k], n.Properties[k]); err != nil {
				return err
			}
		}
	}
	if items, ok := fields["items"]; ok && n.Items != nil {
		if err := orderProperties(items, n.Items); err != nil {
			return err
		}
	}
	if alts, ok := fields["oneOf"]; ok {
		var list []json.RawMessage
		_ = json.Unmarshal(alts, &list)
		for i := range list {
			if err := orderProperties(list[i], n.OneOf[i]); err != nil {
				return err
			}
		}
	}
	if defs, ok := fields["$defs"]; ok {
		var sub map[string]json.RawMessage
		_ = json.Unmarshal(defs, &sub)
		for k, v := range sub {
			if err := orderProperties(v, n.Defs[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// objectKeys lists a JSON object's keys in order.
func objectKeys(raw []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// The lines around the reference in docs/config.md.
const (
	ReferenceStart = "<!-- The reference below is written by `turnlog config reference` from config/agent.schema.json; edit the schema, then run make config-docs. -->"
	ReferenceEnd   = "<!-- End of the reference. -->"
)

// Reference is docs/config.md's reference part, written from Schema: every section
// of agent.yaml with each key's type, default, an example and what it does, and the
// section's examples.
func Reference() (string, error) {
	root, err := parseSchema()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	writeSection(&b, root, "file", "The file", root)
	for _, name := range Sections {
		def, ok := root.Defs[name]
		if !ok {
			return "", fmt.Errorf("the schema has no definition %q", name)
		}
		writeSection(&b, root, name, "`"+name+"`", def)
	}
	return b.String(), nil
}

// Where each definition appears in a config, for its section's heading.
var sectionPlaces = map[string]string{
	"file": "the whole agent.yaml", "app": "apps.NAME", "llm": "apps.NAME.llms.ID", "scripted_rule": "apps.NAME.llms.ID.rules[]",
	"tool": "apps.NAME.tools.NAME", "agent": "apps.NAME.agents.NAME", "tool_ref": "apps.NAME.agents.NAME.tools[]",
	"handoff": "apps.NAME.agents.NAME.handoffs[]", "guardrail": "apps.NAME.agents.NAME.guardrails.input[] and .output[]",
	"context": "apps.NAME.agents.NAME.context", "embeddings": "apps.NAME.agents.NAME.memory.embeddings", "policy": "apps.NAME.policy",
	"policy_rule": "apps.NAME.policy.rules[]", "mcp": "apps.NAME.mcp", "mcp_server": "apps.NAME.mcp.servers.NAME",
	"webhook": "apps.NAME.webhooks.NAME", "guardrail_policy_rule": "guardrail_policy[]",
	"app_budgets": "apps.NAME.budgets", "price": "apps.NAME.llms.ID.price", "budgets": "apps.NAME.agents.NAME.budgets",
	"budget_limit": "apps.NAME.budgets.turn, .session, .user_day (and an agent's)",
}

func writeSection(b *strings.Builder, root *node, anchor, title string, n *node) {
	fmt.Fprintf(b, "### %s\n\n", title)
	if anchor == "file" {
		fmt.Fprintf(b, "%s\n\n", markdown(n.Description))
	} else {
		fmt.Fprintf(b, "At `%s`. %s\n\n", sectionPlaces[anchor], markdown(n.Description))
	}
	alternatives := []*node{n}
	if len(n.OneOf) > 0 {
		alternatives = n.OneOf
		for _, alt := range n.OneOf {
			if len(alt.Properties) == 0 {
				fmt.Fprintf(b, "- As %s: %s\n", typeOf(alt), markdown(alt.Description))
			}
		}
		b.WriteString("\n")
	}
	rows := [][]string{}
	for _, alt := range alternatives {
		rows = append(rows, propertyRows("", alt, n.Examples)...)
	}
	if len(rows) > 0 {
		b.WriteString("| key | type | default | example | what it does |\n| --- | --- | --- | --- | --- |\n")
		for _, r := range rows {
			fmt.Fprintf(b, "| %s |\n", strings.Join(r, " | "))
		}
		b.WriteString("\n")
	}
	for _, ex := range n.Examples {
		out, err := yaml.MarshalWithOptions(ordered(ex, n, root), yaml.IndentSequence(true))
		if err != nil {
			continue
		}
		fmt.Fprintf(b, "```yaml\n%s```\n\n", out)
	}
}

// propertyRows are the rows of n's keys, prefix before each, with an inline
// mapping's keys after it (guardrails.input).
func propertyRows(prefix string, n *node, examples []any) [][]string {
	var rows [][]string
	for _, key := range n.order {
		p := n.Properties[key]
		def := "—"
		switch {
		case contains(n.Required, key):
			def = "required"
		case p.Default != nil:
			def = "`" + compact(p.Default) + "`"
		}
		ex := exampleOf(key, p, examples)
		what := markdown(p.Description)
		if p.Deprecated {
			what = "*Old spelling.* " + what
		}
		rows = append(rows, []string{"`" + prefix + key + "`", typeOf(p), def, ex, what})
		if len(p.Properties) > 0 {
			rows = append(rows, propertyRows(prefix+key+".", p, subExamples(key, examples))...)
		}
		if p.Items != nil && len(p.Items.Properties) > 0 && p.Items.Ref == "" {
			rows = append(rows, propertyRows(prefix+key+"[].", p.Items, subExamples(key, examples))...)
		}
	}
	return rows
}

// exampleOf is a key's example: its own, or its value in the section's examples.
func exampleOf(key string, p *node, examples []any) string {
	if section := sectionOf(p); section != "" {
		return "see [" + section + "](#" + section + ")"
	}
	cell := exampleValue(key, p, examples)
	if len(cell) > 72 {
		return "see the example below"
	}
	return cell
}

// sectionOf is the section a key's value is described in: its own, or its items' or
// entries' ("" for none).
func sectionOf(p *node) string {
	ref := p.Ref
	if p.Items != nil {
		ref = p.Items.Ref
	}
	if len(p.Additional) > 0 {
		var v node
		if json.Unmarshal(p.Additional, &v) == nil {
			ref = v.Ref
		}
	}
	if name := strings.TrimPrefix(ref, "#/$defs/"); name != "" && name != "duration" {
		return name
	}
	return ""
}

func exampleValue(key string, p *node, examples []any) string {
	if len(p.Examples) > 0 {
		return "`" + compact(p.Examples[0]) + "`"
	}
	for _, ex := range examples {
		if m, ok := ex.(map[string]any); ok {
			if v, ok := m[key]; ok {
				return "`" + compact(v) + "`"
			}
		}
	}
	if len(p.Enum) > 0 {
		return "`" + compact(p.Enum[0]) + "`"
	}
	return "—"
}

// subExamples are the values key has in examples (a list's items, one by one).
func subExamples(key string, examples []any) []any {
	var out []any
	for _, ex := range examples {
		m, ok := ex.(map[string]any)
		if !ok {
			continue
		}
		switch v := m[key].(type) {
		case []any:
			out = append(out, v...)
		case nil:
		default:
			out = append(out, v)
		}
	}
	return out
}

// typeOf says a node's type as the reference shows it.
func typeOf(n *node) string {
	if n.Ref != "" {
		name := strings.TrimPrefix(n.Ref, "#/$defs/")
		if name == "duration" {
			return "duration"
		}
		return "[" + name + "](#" + name + ")"
	}
	if len(n.OneOf) > 0 {
		var alts []string
		for _, a := range n.OneOf {
			alts = append(alts, typeOf(a))
		}
		return strings.Join(alts, " or ")
	}
	if len(n.Enum) > 0 {
		var vals []string
		for _, v := range n.Enum {
			vals = append(vals, "`"+fmt.Sprint(v)+"`")
		}
		return "one of " + strings.Join(vals, ", ")
	}
	switch t := n.Type.(type) {
	case []any:
		var names []string
		for _, x := range t {
			names = append(names, plainType(fmt.Sprint(x)))
		}
		return strings.Join(names, " or ")
	case string:
		switch t {
		case "array":
			if n.Items != nil {
				if len(n.Items.Properties) > 0 && n.Items.Ref == "" {
					return "list of mappings"
				}
				return "list of " + typeOf(n.Items)
			}
			return "list"
		case "object":
			if len(n.Additional) > 0 && string(n.Additional) != "false" {
				var v node
				if err := json.Unmarshal(n.Additional, &v); err == nil {
					return "mapping of name → " + typeOf(&v)
				}
			}
			if len(n.Properties) > 0 {
				return "mapping"
			}
			return "mapping (any keys)"
		case "integer", "number":
			return plainType(t) + bounds(n)
		}
		return plainType(t)
	}
	return "any"
}

func plainType(t string) string {
	switch t {
	case "object":
		return "mapping"
	case "array":
		return "list"
	}
	return t
}

func bounds(n *node) string {
	switch {
	case n.Minimum != nil && n.Maximum != nil:
		return fmt.Sprintf(" (%s–%s)", *n.Minimum, *n.Maximum)
	case n.Minimum != nil:
		return fmt.Sprintf(" (≥ %s)", *n.Minimum)
	}
	return ""
}

// compact writes a value as one line of JSON, which YAML reads as written.
func compact(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.ReplaceAll(strings.TrimSpace(buf.String()), "|", `\|`)
}

// markdown makes a schema description safe in a table cell.
func markdown(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}

// ordered gives an example's mappings their keys in the schema's order and its whole
// numbers as integers, for the YAML the reference shows.
func ordered(v any, n *node, root *node) any {
	for n != nil && n.Ref != "" {
		n = root.Defs[strings.TrimPrefix(n.Ref, "#/$defs/")]
	}
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
		return x
	case []any:
		var items *node
		if n != nil {
			items = n.Items
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ordered(e, items, root)
		}
		return out
	case map[string]any:
		var out yaml.MapSlice
		done := map[string]bool{}
		if n != nil {
			for _, alt := range append([]*node{n}, n.OneOf...) {
				for _, k := range alt.order {
					if e, ok := x[k]; ok && !done[k] {
						out = append(out, yaml.MapItem{Key: k, Value: ordered(e, alt.Properties[k], root)})
						done[k] = true
					}
				}
			}
		}
		var entry *node
		if n != nil && len(n.Additional) > 0 {
			var v node
			if json.Unmarshal(n.Additional, &v) == nil {
				entry = &v
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			if !done[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, yaml.MapItem{Key: k, Value: ordered(x[k], entry, root)})
		}
		return out
	}
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Keys lists every key path the schema knows, NAME standing for a name of the
// user's choosing and [] for a list's items: the reference covers them all.
func Keys() ([]string, error) {
	root, err := parseSchema()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var walk func(path string, n *node, depth int)
	walk = func(path string, n *node, depth int) {
		if n == nil || depth > 12 {
			return
		}
		if n.Ref != "" {
			walk(path, root.Defs[strings.TrimPrefix(n.Ref, "#/$defs/")], depth+1)
			return
		}
		for _, alt := range n.OneOf {
			walk(path, alt, depth+1)
		}
		for k, p := range n.Properties {
			key := strings.TrimPrefix(path+"."+k, ".")
			seen[key] = true
			walk(key, p, depth+1)
		}
		if n.Items != nil {
			walk(path+"[]", n.Items, depth+1)
		}
		if len(n.Additional) > 0 && string(n.Additional) != "false" {
			var v node
			if json.Unmarshal(n.Additional, &v) == nil && (v.Ref != "" || len(v.Properties) > 0) {
				walk(path+".NAME", &v, depth+1)
			}
		}
	}
	walk("", root, 0)
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, nil
}
