package httpapi

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Conflicts name each path of a revert_conflict, with both sides.
	Conflicts []fsm.RevertConflict `json:"conflicts,omitempty"`
}

// statusOf is the one table both transports share (events.HTTPStatus).
func statusOf(code events.Code) int { return events.HTTPStatus(code) }

// errorHandler writes every error in turnlog's shape; unknown errors are logged once
// by the caller's logger and shown as "internal error".
func errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	if r := c.Request(); r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		// A refused request's body may never be read (a 401 does not wait for it):
		// the connection ends with the answer rather than waiting to drain it.
		c.Response().Header().Set(echo.HeaderConnection, "close")
	}
	status, body := http.StatusInternalServerError, errorDetail{Code: string(events.CodeInternal), Message: "internal error"}
	var he *echo.HTTPError
	var te *events.Error
	switch {
	case errors.As(err, &te):
		status, body = statusOf(te.Code), errorDetail{Code: string(te.Code), Message: te.Public()}
		if te.Code == events.CodeInternal {
			body.Message = "internal error"
		}
		var rc *fsm.RevertConflictError
		if errors.As(err, &rc) {
			body.Conflicts = rc.Conflicts
		}
		if te.Code == events.CodeInternal || status >= 500 {
			c.Logger().Error(err) // the whole chain, driver text included, for the operator
		}
	case errors.As(err, &he):
		status = he.Code
		msg, _ := he.Message.(string)
		switch {
		case status == http.StatusRequestEntityTooLarge:
			msg = "request body is too large"
		case msg == "":
			msg = http.StatusText(status)
		}
		body = errorDetail{Code: httpCode(status), Message: msg}
	default:
		c.Logger().Error(err)
	}
	_ = c.JSON(status, errorBody{Error: body})
}

func httpCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return string(events.CodeNotFound)
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusUnsupportedMediaType:
		return "unsupported_media_type"
	case http.StatusMisdirectedRequest:
		return "misdirected"
	case http.StatusRequestTimeout:
		return "request_timeout"
	}
	if status < 500 {
		return string(events.CodeInvalid)
	}
	return string(events.CodeInternal)
}
