package functool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Tool is a Go function with typed arguments A.
type Tool[A any] struct {
	spec   fsm.ToolSpec
	schema *validator.Schema
	fn     func(context.Context, A) (any, error)
}

var _ fsm.Tool = (*Tool[struct{}])(nil)

// New builds a tool named name from fn. The schema is reflected from A: fields
// without `omitempty` are required and unknown fields are refused.
func New[A any](name, description string, fn func(context.Context, A) (any, error)) (*Tool[A], error) {
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	s := r.Reflect(new(A))
	s.Version = ""
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	params, err := events.Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, err
	}
	c := validator.NewCompiler()
	url := "turnlog:tool/" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	return &Tool[A]{spec: fsm.ToolSpec{Name: name, Description: description, Parameters: params}, schema: compiled, fn: fn}, nil
}

// MustNew is New for tools defined in code, whose schemas cannot fail.
func MustNew[A any](name, description string, fn func(context.Context, A) (any, error)) *Tool[A] {
	t, err := New(name, description, fn)
	if err != nil {
		panic(err)
	}
	return t
}

// Spec implements fsm.Tool.
func (t *Tool[A]) Spec() fsm.ToolSpec { return t.spec }

var _ fsm.ArgumentsValidator = (*Tool[struct{}])(nil)

// ValidateArguments checks args against the tool's schema without running it.
// Errors: *fsm.ArgumentsError naming the field.
func (t *Tool[A]) ValidateArguments(args json.RawMessage) error {
	doc, err := validator.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &fsm.ArgumentsError{Field: "$", Message: "arguments are not valid JSON"}
	}
	if err := t.schema.Validate(doc); err != nil {
		return argumentsError(err)
	}
	return nil
}

// Call validates args, decodes them into A and runs the function.
func (t *Tool[A]) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	if err := t.ValidateArguments(args); err != nil {
		return nil, err
	}
	var a A
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, &fsm.ArgumentsError{Field: "$", Message: err.Error()}
	}
	out, err := t.fn(ctx, a)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// argumentsError names the deepest failing location of a validation error.
func argumentsError(err error) error {
	ve, ok := err.(*validator.ValidationError)
	if !ok {
		return &fsm.ArgumentsError{Field: "$", Message: err.Error()}
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := append([]string{}, ve.InstanceLocation...)
	if req, ok := ve.ErrorKind.(*kind.Required); ok && len(req.Missing) > 0 {
		loc = append(loc, req.Missing[0])
	}
	if add, ok := ve.ErrorKind.(*kind.AdditionalProperties); ok && len(add.Properties) > 0 {
		loc = append(loc, add.Properties[0])
	}
	field := "$"
	if len(loc) > 0 {
		field = strings.Join(loc, ".")
	}
	return &fsm.ArgumentsError{Field: field, Message: ve.ErrorKind.LocalizedString(message.NewPrinter(language.English))}
}
