package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
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
	field := "resume_map." + events.ShownName(id) + "."
	for name, s := range map[string]*string{"rejection_message": a.RejectionMessage, "reviewer_notes": a.ReviewerNotes, "decision": a.Decision} {
		if s != nil {
			if err := storableText(field+name, *s); err != nil {
				return err
			}
		}
	}
	if a.Grant != nil {
		for name, s := range map[string]string{"grant.command": a.Grant.Command, "grant.prefix": a.Grant.Prefix} {
			if err := storableText(field+name, s); err != nil {
				return err
			}
		}
	}
	if len(a.Arguments) > 0 {
		return storableJSON(field+"arguments", a.Arguments)
	}
	return nil
}

// storableMessage is a message of turnlog's about a failure as the log keeps it: a
// NUL it quotes (from a provider's or a tool's words) shown as U+FFFD.
func storableMessage(msg string) string {
	return strings.ReplaceAll(msg, "\x00", "\uFFFD")
}

// storableEvents refuses, before any is appended, an event the log cannot keep, so
// the store never refuses one: a typed invalid error naming it, never the store's
// words. Model answers and tool results are checked where they are made (they
// become a failure or a tool error there); this is for everything else.
func storableEvents(evs []events.Event) error {
	for _, ev := range evs {
		if ev.Type == events.TypeModelCalled || ev.Type == events.TypeToolResulted {
			continue
		}
		if err := events.StoreLimits.Check(ev.Data); err != nil {
			return &events.Error{Code: events.CodeInvalid, Field: "data",
				Message: fmt.Sprintf("%s at %q holds what turnlog's log cannot keep", ev.Type, ev.Path), Err: err}
		}
	}
	return nil
}
