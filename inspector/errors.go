package inspector

import (
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/events"
)

func asError(err error, target **events.Error) bool { return errors.As(err, target) }

// statusOf is the one table both transports share (events.HTTPStatus).
func statusOf(code events.Code) int { return events.HTTPStatus(code) }

func stringOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// publicText is what a page may show of err: a typed error's public message (see
// events.Error.Public), never a cause's internals.
func publicText(err error) string {
	var te *events.Error
	if asError(err, &te) && te.Code != events.CodeInternal {
		return te.Public()
	}
	return "internal error"
}
