package functool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON schema for a tool's arguments.
type Schema struct {
	raw      json.RawMessage // canonical
	compiled *validator.Schema
}

// CompileSchema compiles a JSON schema for tool arguments: an object schema (a
// schema of another type could never describe the arguments object a model sends).
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	params, err := events.Canonicalize(raw)
	if err != nil {
		return nil, err
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, err
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a tool's parameters are a JSON schema object")
	}
	if t, ok := m["type"]; ok && t != "object" {
		return nil, fmt.Errorf(`the arguments are an object: "type" must be "object", not %v`, t)
	}
	c := validator.NewCompiler()
	const url = "turnlog:tool/arguments"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	return &Schema{raw: params, compiled: compiled}, nil
}

// JSON is the schema as canonical JSON.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// Validate checks arguments against the schema. Errors: *fsm.ArgumentsError naming
// the field ("$" for the whole).
func (s *Schema) Validate(args json.RawMessage) error {
	if !json.Valid(args) {
		return &fsm.ArgumentsError{Field: "$", Message: "the arguments are not valid JSON"}
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &fsm.ArgumentsError{Field: "$", Message: "the arguments are not valid JSON"}
	}
	if err := s.compiled.Validate(doc); err != nil {
		return argumentsError(err)
	}
	return nil
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
