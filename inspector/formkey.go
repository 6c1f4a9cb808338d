package inspector

import (
	"encoding/json"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/turns"
)

// formKeyField is the hidden field of a form that acts (formKey in the templates).
const formKeyField = "key"

// formKey is the Idempotency-Key of a form that acts: its key field, for the form's
// route, with what it asks (fields) as the body. A form without one (sent by
// something else than the page) acts each time it is sent.
func (s *Server) formKey(c echo.Context, fields any) turns.Key {
	body, err := json.Marshal(fields)
	if err != nil {
		body = nil
	}
	return turns.Key{Owner: signInOf(c).User, Value: c.FormValue(formKeyField), Route: c.Request().Method + " " + c.Request().URL.Path, Body: body}
}
