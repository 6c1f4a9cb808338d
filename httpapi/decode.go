package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
)

// readBody reads a request's body whole, within the body limit, and checks it
// against the request limits before anything decodes it.
func (s *Server) readBody(c echo.Context) ([]byte, error) {
	r := c.Request()
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= s.bodyLimit {
		buf.Grow(int(r.ContentLength)) // one allocation of the size the client declared
	}
	_, err := buf.ReadFrom(r.Body)
	raw := buf.Bytes()
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) || errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return nil, echo.NewHTTPError(http.StatusRequestEntityTooLarge, "request body is too large")
		}
		if errors.Is(err, errBodyTimeout) {
			return nil, echo.NewHTTPError(http.StatusRequestTimeout, "the request body was not sent in time")
		}
		return nil, events.FieldError(events.CodeInvalid, "body", "could not be read: %v", err)
	}
	if err := s.limits.Check(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// decodeRaw decodes a JSON body strictly: malformed JSON, unknown fields (names match
// case-sensitively), invalid UTF-8 and lone surrogates, trailing data, and integers
// beyond ±2^53 are refused with an error naming the field.
func decodeRaw(raw []byte, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return events.FieldError(events.CodeInvalid, "body", "a JSON object is required")
	}
	if _, err := events.Canonicalize(raw); err != nil {
		var ce *events.CanonicalError
		if errors.As(err, &ce) {
			return ce.AsError()
		}
		return events.FieldError(events.CodeInvalid, "body", "%v", err)
	}
	if err := events.CheckStrict(raw, dst); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return typeError(te, "")
		}
		return events.FieldError(events.CodeInvalid, "body", "%s", cleanJSONError(err))
	}
	return nil
}

func cleanJSONError(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// typeError says which field of a body holds a value of the wrong JSON type, in
// JSON's words (never a Go type's name).
func typeError(te *json.UnmarshalTypeError, prefix string) error {
	field := te.Field
	if field == "" {
		field = "body"
	}
	if prefix != "" {
		field = strings.TrimSuffix(prefix+"."+te.Field, ".")
	}
	return events.FieldError(events.CodeInvalid, field, "must be %s, got %s", jsonTypeName(te.Type), jsonValueName(te.Value))
}

// jsonTypeName names what JSON value decodes into t.
func jsonTypeName(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a JSON value"
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a JSON value"
}

// jsonValueName is encoding/json's name of a value it met, as JSON calls it.
func jsonValueName(v string) string {
	switch v {
	case "object", "array", "string", "bool", "number":
		if v == "bool" {
			return "true or false"
		}
		if v == "object" || v == "array" {
			return "an " + v
		}
		return "a " + v
	}
	if strings.HasPrefix(v, "number") {
		return "the number " + strings.TrimSpace(strings.TrimPrefix(v, "number"))
	}
	return v
}
