package inspector

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// MaxFixtureBytes caps a fixture uploaded to the replay page.
const MaxFixtureBytes = 4 << 20

// replayForm offers the user's sessions, or an uploaded fixture, to replay.
func (s *Server) replayForm(c echo.Context) error {
	list, err := s.cfg.Reader.SessionPage(c.Request().Context(), signInOf(c).User, "", time.Time{}, "", PageSize)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "replay", "Replay", map[string]any{"Sessions": list, "Max": MaxFixtureBytes >> 20})
}

// divergedRe splits a divergence's message into what was recorded and what the
// replay did now.
var divergedRe = regexp.MustCompile(`(?s)^(.*?):? \(?recorded (.*), (?:replayed|now) (.*?)\)?$`)

// replay replays a session of the user's, or an uploaded fixture, on a throwaway
// store with an engine that acts on nothing, and shows "N events match" or the first
// divergence, recorded and now side by side.
func (s *Server) replay(c echo.Context) error {
	if s.cfg.Replay == nil {
		return events.Errorf(events.CodeInvalid, "this server replays nothing")
	}
	ctx := c.Request().Context() // the body is capped before the CSRF check reads it (capBodies)
	var recorded []events.Event
	var source string
	if id := c.FormValue("session"); id != "" {
		sess, err := s.cfg.Reader.Session(ctx, id)
		if err != nil || sess.Owner != signInOf(c).User {
			return events.FieldError(events.CodeNotFound, "session", "no session %s", id)
		}
		if recorded, err = fsm.Recording(ctx, s.cfg.Reader, id); err != nil {
			return err
		}
		source = "session " + id
	} else {
		fh, err := c.FormFile("fixture")
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return events.FieldError(events.CodeInvalid, "fixture", "is larger than %d MiB", MaxFixtureBytes>>20)
			}
			return events.FieldError(events.CodeInvalid, "fixture", "choose a session or a fixture file (events.jsonl)")
		}
		if fh.Size > MaxFixtureBytes {
			return events.FieldError(events.CodeInvalid, "fixture", "is larger than %d MiB", MaxFixtureBytes>>20)
		}
		f, err := fh.Open()
		if err != nil {
			return err
		}
		defer f.Close()
		if recorded, err = events.ReadJSONL(f, fh.Filename); err != nil {
			return s.render(c, http.StatusBadRequest, "replay", "Replay", map[string]any{"Error": err.Error(), "Max": MaxFixtureBytes >> 20})
		}
		source = "fixture " + fh.Filename
	}
	data := map[string]any{"Source": source, "Recorded": len(recorded), "Max": MaxFixtureBytes >> 20}
	rep, err := s.cfg.Replay(ctx, recorded)
	var te *events.Error
	switch {
	case err == nil:
		data["Report"] = rep
	case errors.As(err, &te) && (te.Code == events.CodeNondeterminism || te.Code == events.CodeCorruptLog || te.Code == events.CodeInvalid):
		d := map[string]string{"Code": string(te.Code), "Path": te.Field, "Message": te.Message}
		if m := divergedRe.FindStringSubmatch(te.Message); m != nil {
			d["Where"], d["Recorded"], d["Now"] = m[1], m[2], m[3]
		}
		data["Divergence"] = d
	default:
		return fmt.Errorf("replay: %w", err)
	}
	return s.render(c, http.StatusOK, "replay", "Replay", data)
}
