package fsm

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// storableText refuses text a caller gives that turnlog's log cannot keep (see
// events.StoreLimits), naming its field; nothing is written.
func storableText(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return events.FieldError(events.CodeInvalid, field, "holds a NUL character, which turnlog's log cannot keep")
	}
	return nil
}

// storableJSON refuses JSON a caller gives that turnlog's log cannot keep, naming
// the path below field.
func storableJSON(field string, raw json.RawMessage) error {
	err := events.StoreLimits.Check(raw)
	var te *events.Error
	if errors.As(err, &te) {
		if te.Field == "body" {
			te.Field = field
		} else {
			te.Field = field + "." + strings.TrimPrefix(te.Field, ".")
		}
	}
	return err
}

// storableAnswer refuses an answer whose message, notes or arguments the log cannot
// keep.
func storableAnswer(id string, a Answer) error {
	field := "resume_map." + id + "."
	for name, s := range map[string]*string{"rejection_message": a.RejectionMessage, "reviewer_notes": a.ReviewerNotes, "decision": a.Decision} {
		if s != nil {
			if err := storableText(field+name, *s); err != nil {
				return err
			}
		}
	}
	if len(a.Arguments) > 0 {
		return storableJSON(field+"arguments", a.Arguments)
	}
	return nil
}
