package functool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
	"github.com/turnlog/turnlog/fsm"
)

// Tool is a Go function with typed arguments A.
type Tool[A any] struct {
	spec   fsm.ToolSpec
	schema *Schema
	fn     func(context.Context, A) (any, error)
}

var _ fsm.Tool = (*Tool[struct{}])(nil)

// New builds a tool named name from fn. The schema is reflected from A: fields
// without `omitempty` are required and unknown fields are refused.
func New[A any](name, description string, fn func(context.Context, A) (any, error)) (*Tool[A], error) {
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	if id := jsonschema.ID("https://" + schemaPackage(reflect.TypeFor[A]().PkgPath())); id.Validate() == nil {
		r.BaseSchemaID = id
	}
	s := r.Reflect(new(A))
	s.Version = ""
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	schema, err := CompileSchema(raw)
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	return &Tool[A]{spec: fsm.ToolSpec{Name: name, Description: description, Parameters: schema.JSON()}, schema: schema, fn: fn}, nil
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
func (t *Tool[A]) ValidateArguments(args json.RawMessage) error { return t.schema.Validate(args) }

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

// schemaPackage is the package path a schema's $id names for arguments declared in
// pkg: pkg itself, except for turnlog's own adapters, which name the package as it
// was before adapters/ was grouped by kind — the $id is part of the tool schemas a
// model is sent and the log records the hash of, so a recorded session replays
// after the move as it did before.
func schemaPackage(pkg string) string {
	const adapters = "github.com/turnlog/turnlog/adapters/"
	rest, ok := strings.CutPrefix(pkg, adapters)
	if !ok {
		return pkg
	}
	if _, name, grouped := strings.Cut(rest, "/"); grouped {
		rest = name
	}
	if rest == "workspacetools" {
		rest = "workspace"
	}
	return adapters + rest
}
