package inspector

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/turns"
)

// answer reads the form's answers, one per pending interrupt (fields named
// "<field>.<interrupt id>"), and resumes the turn through the engine, as the REST
// API's resume_map does. A refused answer (an edit that fails the tool's schema)
// changes nothing: the page shows the error, naming the field, with the form as it
// was filled in.
func (s *Server) answer(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	pending, err := s.cfg.Reader.PendingInterrupts(ctx, sess.ID)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return events.FieldError(events.CodeInvalid, "form", "%v", err)
	}
	// The key's body is the form as sent: a repeat is known as one even after its
	// first sending answered every question.
	key := s.formKey(c, answerFields(form))
	if len(pending) == 0 {
		if m, ok, err := s.cfg.Turns.Made(ctx, key); err == nil && ok && m.Session == sess.ID {
			// This form was sent before, and answered: as its first sending was.
			return c.Redirect(http.StatusSeeOther, "/ui/sessions/"+sess.ID+"?done=answered")
		}
		return events.Errorf(events.CodeConflict, "session %s waits for no answer (someone may have answered already)", sess.ID)
	}
	answers := map[string]fsm.Answer{}
	for _, p := range pending {
		a, err := answerOf(form, p.ID, p.Kind, s.limits())
		if err != nil {
			return s.sessionPageWith(c, http.StatusBadRequest, err, form)
		}
		answers[p.ID] = a
	}
	if signInOf(c).Admin { // signed in with an admin key: may extend budgets kept for operators
		ctx = fsm.AsOperator(ctx)
	}
	out, err := s.cfg.Turns.Run(ctx, turns.Request{Session: sess.ID, User: signInOf(c).User, Answers: answers, Key: key})
	if err != nil {
		if events.IsCode(err, events.CodeInvalid) {
			return s.sessionPageWith(c, http.StatusBadRequest, err, form)
		}
		return err
	}
	out.Close()
	// The turn goes on in the engine; the session page follows it live.
	return c.Redirect(http.StatusSeeOther, "/ui/sessions/"+sess.ID+"?done=answered")
}

// answerFields are the form's answer fields (its token and key left out).
func answerFields(form url.Values) map[string][]string {
	out := map[string][]string{}
	for name, v := range form {
		if name != csrfField && name != formKeyField {
			out[name] = v
		}
	}
	return out
}

// answerOf is one interrupt's answer from the form.
func answerOf(form url.Values, id, kind string, limits events.Limits) (fsm.Answer, error) {
	choice := form.Get("choice." + id)
	field := func(name string) string { return "answer " + id + ": " + name }
	yes, no := true, false
	if kind == events.InterruptBudget {
		return budgetAnswer(form, id)
	}
	if kind == events.InterruptGuardrailReview {
		notes := strings.TrimSpace(form.Get("notes." + id))
		switch choice {
		case events.DecisionApprove, events.DecisionReject:
			a := fsm.Answer{Decision: &choice}
			if notes != "" {
				a.ReviewerNotes = &notes
			}
			return a, nil
		}
		return fsm.Answer{}, events.FieldError(events.CodeInvalid, field("decision"), "choose approve or reject")
	}
	switch choice {
	case "approve":
		return fsm.Answer{Confirmed: &yes}, nil
	case "session":
		return fsm.Answer{Confirmed: &yes, Grant: &fsm.GrantAnswer{Command: strings.TrimSpace(form.Get("grant." + id))}}, nil
	case "reject":
		a := fsm.Answer{Confirmed: &no}
		if msg := strings.TrimSpace(form.Get("message." + id)); msg != "" {
			a.RejectionMessage = &msg
		}
		return a, nil
	case "edit":
		raw := strings.TrimSpace(form.Get("arguments." + id))
		if err := limits.Check([]byte(raw)); err != nil {
			var te *events.Error
			if asError(err, &te) {
				if te.Field == "body" {
					te.Field = field("arguments")
				} else {
					te.Field = field("arguments") + "." + te.Field
				}
			}
			return fsm.Answer{}, err
		}
		if !json.Valid([]byte(raw)) || !strings.HasPrefix(raw, "{") {
			return fsm.Answer{}, events.FieldError(events.CodeInvalid, field("arguments"), "must be a JSON object, as the tool takes")
		}
		return fsm.Answer{Confirmed: &yes, Arguments: json.RawMessage(raw)}, nil
	}
	return fsm.Answer{}, events.FieldError(events.CodeInvalid, field("choice"), "choose approve, approve for the session, reject or edit")
}

// limits are the bounds of the JSON a form sends.
func (s *Server) limits() events.Limits {
	if s.cfg.Limits != nil {
		return *s.cfg.Limits
	}
	return events.DefaultLimits
}
