package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
)

// readBody reads a request's body whole, within the body limit, and checks it
// against the request limits before anything decodes it.
func (s *Server) readBody(c echo.Context) ([]byte, error) {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) || errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return nil, echo.NewHTTPError(http.StatusRequestEntityTooLarge, "request body is too large")
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
			return events.FieldError(events.CodeInvalid, te.Field, "must be %s, got %s", te.Type, te.Value)
		}
		return events.FieldError(events.CodeInvalid, "body", "%s", cleanJSONError(err))
	}
	return nil
}

func cleanJSONError(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}
