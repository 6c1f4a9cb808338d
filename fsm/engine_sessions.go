package fsm

// Making sessions.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// CreateSession opens a session of app for owner. Errors: invalid (unknown app,
// metadata that is not a JSON object), internal.
func (e *Engine) CreateSession(ctx context.Context, app, owner string, metadata json.RawMessage) (projection.Session, error) {
	a, ok := e.apps[app]
	if !ok {
		return projection.Session{}, events.FieldError(events.CodeInvalid, "app", "unknown app %q", app)
	}
	if len(metadata) > 0 {
		var err error
		if metadata, err = canonicalMetadata(metadata); err != nil {
			return projection.Session{}, err
		}
	}
	id := e.opts.NewID()
	ev, err := events.New("", "", &events.SessionCreated{App: app, Owner: owner, Agent: a.StartAgent, Metadata: metadata})
	if err != nil {
		return projection.Session{}, err
	}
	if _, err := e.appendEvents(ctx, id, 0, []events.Event{ev}, false); err != nil {
		return projection.Session{}, fmt.Errorf("create session: %w", err)
	}
	return e.store.Session(ctx, id)
}

// canonicalMetadata checks that metadata is a JSON object and canonicalizes it.
func canonicalMetadata(metadata json.RawMessage) (json.RawMessage, error) {
	if err := storableJSON("metadata", metadata); err != nil {
		return nil, err
	}
	canon, err := events.Canonicalize(metadata)
	if err != nil {
		if ce, ok := err.(*events.CanonicalError); ok {
			ce.Path = "metadata" + strings.TrimPrefix(ce.Path, "$")
			return nil, ce.AsError()
		}
		return nil, err
	}
	if canon[0] != '{' {
		return nil, events.FieldError(events.CodeInvalid, "metadata", "must be a JSON object")
	}
	return canon, nil
}
