package config

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is the JSON Schema of agent.yaml (agent.schema.json): the shape the loader
// accepts. Decode checks every config against it before anything else, so a config
// it refuses is refused; the checks it cannot say (cross-references, unique names,
// files and variables that must exist) are the loader's.
//
//go:embed agent.schema.json
var Schema []byte

// SchemaPath is where the schema lives in the repository, for editors' modelines.
const SchemaPath = "config/agent.schema.json"

var compiled = sync.OnceValues(func() (*validator.Schema, error) {
	doc, err := validator.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		return nil, err
	}
	c := validator.NewCompiler()
	const url = "turnlog:agent.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
})

// Errors are every problem of a config, in the order of the file.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Add adds err to es when it is a config problem (an *Error, or Errors) and says
// whether it was; nil adds nothing and is no problem.
func (es *Errors) Add(err error) bool {
	switch e := err.(type) {
	case Errors:
		*es = append(*es, e...)
		return true
	case *Error:
		*es = append(*es, e)
		return true
	}
	return false
}

// Err is the problems as one error, in the order of the file: nil for none, the
// *Error for one.
func (es Errors) Err() error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	sorted := append(Errors{}, es...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Line < sorted[j].Line })
	return sorted
}

// Unwrap lets errors.As find the first *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// checkShape validates the YAML document against Schema and returns every problem
// with its line (nil: the shape is right).
func (d *Doc) checkShape() error {
	var v any
	if err := yaml.Unmarshal(d.data, &v); err != nil {
		return &Error{File: d.Name, Msg: yaml.FormatError(err, false, false)}
	}
	inst, err := jsonValue(v, "")
	if err != nil {
		return d.ErrAt(err.path, "%s", err.msg)
	}
	s, cerr := compiled()
	if cerr != nil {
		return fmt.Errorf("agent.schema.json: %w", cerr)
	}
	verr := s.Validate(inst)
	if verr == nil {
		return nil
	}
	ve, ok := verr.(*validator.ValidationError)
	if !ok {
		return &Error{File: d.Name, Msg: verr.Error()}
	}
	var es Errors
	seen := map[string]bool{}
	p := message.NewPrinter(language.English)
	for _, leaf := range leaves(ve, nil) {
		for _, pr := range describe(inst, leaf.err, leaf.parent, p) {
			if seen[pr.path+"\x00"+pr.msg] {
				continue
			}
			seen[pr.path+"\x00"+pr.msg] = true
			var e *Error
			if asError(d.ErrAt(pr.path, "%s", pr.msg), &e) {
				es = append(es, e)
			}
		}
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
	if len(es) == 1 {
		return es[0]
	}
	return es
}

func asError(err error, e **Error) bool {
	x, ok := err.(*Error)
	*e = x
	return ok
}

// failure is a validation failure and the one it is a cause of.
type failure struct{ err, parent *validator.ValidationError }

// leaves are the innermost failures of a validation error. Of a oneOf or anyOf, only
// the alternatives of the value's own type count: memory: {embedings: …} is a mapping
// with a wrong key, not "a boolean or".
func leaves(ve, parent *validator.ValidationError) []failure {
	if len(ve.Causes) == 0 {
		return []failure{{ve, parent}}
	}
	causes := ve.Causes
	switch ve.ErrorKind.(type) {
	case *kind.PropertyNames:
		return []failure{{ve, parent}} // describe names the key
	case *kind.OneOf, *kind.AnyOf:
		var sameType []*validator.ValidationError
		for _, c := range causes {
			if _, wrongType := c.ErrorKind.(*kind.Type); !wrongType {
				sameType = append(sameType, c)
			}
		}
		if len(sameType) == 0 {
			return []failure{{ve, parent}} // no alternative takes this type
		}
		causes = sameType
	}
	var out []failure
	for _, c := range causes {
		out = append(out, leaves(c, ve)...)
	}
	return out
}

// describe gives a failure's config path (as ErrAt takes it) and its message, said
// as the loader says its own: what is wrong, what was given, what would do.
func describe(inst any, ve, parent *validator.ValidationError, p *message.Printer) []problem {
	loc := append([]string{}, ve.InstanceLocation...)
	msg := ve.ErrorKind.LocalizedString(p)
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		var out []problem
		for _, key := range k.Missing {
			out = append(out, problem{pathString(inst, append(append([]string{}, loc...), key)), "is required"})
		}
		return out
	case *kind.AdditionalProperties:
		var out []problem
		for _, key := range k.Properties {
			msg := "is not a known key here (docs/config.md lists them)"
			if near := nearestKey(ve.SchemaURL, key); near != "" {
				msg = fmt.Sprintf("is not a known key here: did you mean %s?", near)
			}
			out = append(out, problem{pathString(inst, append(append([]string{}, loc...), key)), msg})
		}
		return out
	case *kind.PropertyNames:
		loc = append(mappingOf(ve, parent), k.Property)
		msg = "is not a name this mapping takes"
		for _, c := range ve.Causes {
			switch ck := c.ErrorKind.(type) {
			case *kind.Enum:
				msg = "is not one of " + listOf(ck.Want)
			case *kind.Pattern:
				msg = "is not a valid name here: letters, digits, _ and - only"
			}
		}
	case *kind.Enum:
		msg = fmt.Sprintf("unknown value %s (one of %s)", shown(k.Got), listOf(k.Want))
	case *kind.Pattern:
		msg = fmt.Sprintf("%q does not match %s", k.Got, k.Want)
		if strings.HasSuffix(ve.SchemaURL, "/$defs/duration/pattern") || strings.HasSuffix(ve.SchemaURL, "/$defs/duration") {
			msg = fmt.Sprintf("must be a positive duration such as 30s, 10m or 1h30m, got %q", k.Got)
		}
	case *kind.Type:
		msg = fmt.Sprintf("is %s, want %s", article(k.Got), strings.Join(mapStrings(k.Want, article), " or "))
		if k.Got == "null" {
			msg = fmt.Sprintf("has no value: give it %s, or leave the key out", strings.Join(mapStrings(k.Want, article), " or "))
		}
		if strings.Contains(ve.SchemaURL, "/$defs/duration") {
			msg = fmt.Sprintf("is %s, want a duration with its unit, such as 30s, 10m or 1h30m", article(k.Got))
		}
	case *kind.Minimum:
		msg = fmt.Sprintf("must be at least %s, got %s", k.Want.RatString(), k.Got.RatString())
		if k.Want.Sign() == 0 {
			msg = fmt.Sprintf("must not be negative, got %s", k.Got.RatString())
		}
	case *kind.Maximum:
		msg = fmt.Sprintf("must be at most %s, got %s", k.Want.RatString(), k.Got.RatString())
	case *kind.MinProperties:
		msg = fmt.Sprintf("needs at least %d entr%s", k.Want, plural(k.Want, "y", "ies"))
	case *kind.MinItems:
		msg = fmt.Sprintf("needs at least %d item%s", k.Want, plural(k.Want, "", "s"))
	case *kind.Not:
		msg = "give one of these keys, not both"
	case *kind.OneOf, *kind.AnyOf:
		msg = "has the wrong type: " + msg
	}
	return []problem{{pathString(inst, loc), msg}}
}

// problem is one thing wrong, where.
type problem struct{ path, msg string }

// mappingOf is the location of the mapping whose key a propertyNames failure names.
// The validator may reuse that failure's own location after recording it, so it is
// found from its parent's location and the property its schema path names.
func mappingOf(ve, parent *validator.ValidationError) []string {
	const suffix = "/propertyNames"
	at := strings.TrimSuffix(ve.SchemaURL, suffix)
	i := strings.LastIndex(at, "/properties/")
	if parent == nil || i < 0 || !strings.HasSuffix(ve.SchemaURL, suffix) {
		return append([]string{}, ve.InstanceLocation...)
	}
	return append(append([]string{}, parent.InstanceLocation...), at[i+len("/properties/"):])
}

func shown(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

func listOf(vs []any) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprint(v)
	}
	return strings.Join(out, ", ")
}

// article names a JSON type as a person would: "a string", "a mapping".
func article(t string) string {
	switch t {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "integer":
		return "an integer"
	case "null":
		return "empty"
	}
	return "a " + t
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// pathString writes an instance location as ErrAt's path: keys after dots, list
// indexes in brackets.
func pathString(inst any, loc []string) string {
	var b strings.Builder
	cur := inst
	for _, tok := range loc {
		switch v := cur.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v) {
				cur = v[i]
				continue
			}
			cur = nil
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			if m, ok := cur.(map[string]any); ok {
				cur = m[tok]
				continue
			}
			cur = nil
		}
	}
	return b.String()
}

type shapeError struct{ path, msg string }

// jsonValue turns a decoded YAML value into the JSON value the schema checks: string
// keys only, numbers as json.Number.
func jsonValue(v any, at string) (any, *shapeError) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			j, err := jsonValue(e, join(at, k))
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, &shapeError{at, fmt.Sprintf("key %v is not a string", k)}
			}
			j, err := jsonValue(e, join(at, ks))
			if err != nil {
				return nil, err
			}
			out[ks] = j
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			j, err := jsonValue(e, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	case nil, string, bool:
		return x, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, &shapeError{at, fmt.Sprintf("%v is not a value JSON can hold", v)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, &shapeError{at, err.Error()}
	}
	switch out.(type) {
	case json.Number, string: // a number, or a value YAML reads as a time
		return out, nil
	}
	return nil, &shapeError{at, fmt.Sprintf("%v is not a string, number, boolean, list or mapping", v)}
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// schemaDoc is Schema as plain JSON values, for what the messages look up in it.
var schemaDoc = sync.OnceValue(func() map[string]any {
	var doc map[string]any
	_ = json.Unmarshal(Schema, &doc)
	return doc
})

// nearestKey is the key the mapping at a schema location takes that key is most
// likely a misspelling of ("" for none close enough).
func nearestKey(schemaURL, key string) string {
	_, pointer, ok := strings.Cut(schemaURL, "#")
	if !ok {
		return ""
	}
	var node any = schemaDoc()
	for _, tok := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(pointer, "/"), "/additionalProperties"), "/") {
		m, ok := node.(map[string]any)
		if !ok {
			return ""
		}
		node = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)]
	}
	m, _ := node.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	best, bestDist := "", 3
	for known := range props {
		if d := editDistance(strings.ToLower(key), known); d < bestDist || (d == bestDist && known < best) {
			best, bestDist = known, d
		}
	}
	if bestDist > len(key)/3+1 {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
