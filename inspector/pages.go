package inspector

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
	"github.com/turnlog/turnlog/turns"
)

// PageSize is how many sessions a list page holds.
const PageSize = 50

// TranscriptPage is how many items of a transcript a session page holds.
const TranscriptPage = 200

func signInOf(c echo.Context) projection.UISession {
	u, _ := c.Get(signInKey).(projection.UISession)
	return u
}

// sessionRow is one session of the list, with what it is doing: its status, its
// first input (its title), when it last did something.
type sessionRow struct {
	projection.Session
	Status string // idle, running or waiting
	Title  string
	Last   time.Time
}

// TitleLength is how much of a session's first input the list shows as its title.
const TitleLength = 80

func (s *Server) statusOf(c echo.Context, sess projection.Session) (string, error) {
	st, _, err := s.lastOf(c, sess)
	return st, err
}

// lastOf is a session's status and its last turn (zero when it has none).
func (s *Server) lastOf(c echo.Context, sess projection.Session) (string, projection.Turn, error) {
	turn, err := s.cfg.Reader.LastTurn(c.Request().Context(), sess.ID)
	switch {
	case events.IsCode(err, events.CodeNotFound):
		return "idle", projection.Turn{}, nil
	case err != nil:
		return "", turn, err
	case turn.Status == projection.TurnSuspended:
		return "waiting", turn, nil
	case turn.Status == projection.TurnRunning:
		return "running", turn, nil
	}
	return "idle", turn, nil
}

// rowOf is a session as the list shows it.
func (s *Server) rowOf(c echo.Context, sess projection.Session) (sessionRow, error) {
	st, last, err := s.lastOf(c, sess)
	if err != nil {
		return sessionRow{}, err
	}
	row := sessionRow{Session: sess, Status: st, Last: sess.CreatedAt}
	if !last.StartedAt.IsZero() {
		row.Last = last.StartedAt
		if last.EndedAt != nil {
			row.Last = *last.EndedAt
		}
	}
	if f, ok := s.cfg.Reader.(interface {
		FirstTurn(ctx context.Context, session string) (projection.Turn, error)
	}); ok {
		first, err := f.FirstTurn(c.Request().Context(), sess.ID)
		if err != nil && !events.IsCode(err, events.CodeNotFound) {
			return sessionRow{}, err
		}
		row.Title = events.ShortenForMessage(strings.Join(strings.Fields(first.Input), " "), TitleLength)
	}
	return row, nil
}

var sessionStatuses = []string{"idle", "running", "waiting"}

// sessionList lists the user's sessions: those waiting for a person first (all of
// them, marked), then every session newest first, a page at a time.
func (s *Server) sessionList(c echo.Context) error {
	ctx, user := c.Request().Context(), signInOf(c).User
	app, status := c.QueryParam("app"), c.QueryParam("status")
	if status != "" && !slices.Contains(sessionStatuses, status) {
		return events.FieldError(events.CodeInvalid, "status", "must be one of %v, got %q", sessionStatuses, status)
	}
	waiting, err := s.sessionsWaiting(c, user, app)
	if err != nil {
		return err
	}
	var afterCreated time.Time
	afterID := ""
	if v := c.QueryParam("after"); v != "" {
		raw, err := base64.RawURLEncoding.DecodeString(v)
		created, id, ok := strings.Cut(string(raw), "|")
		t, terr := time.Parse(time.RFC3339Nano, created)
		if err != nil || !ok || terr != nil || id == "" {
			return events.FieldError(events.CodeInvalid, "after", "is not a page this inspector linked to")
		}
		afterCreated, afterID = t, id
	}
	page, err := s.cfg.Reader.SessionPage(ctx, user, app, afterCreated, afterID, PageSize+1)
	if err != nil {
		return err
	}
	next := ""
	if len(page) > PageSize {
		page = page[:PageSize]
		last := page[PageSize-1]
		next = base64.RawURLEncoding.EncodeToString([]byte(last.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + last.ID))
	}
	var rows []sessionRow
	for _, sess := range page {
		row, err := s.rowOf(c, sess)
		if err != nil {
			return err
		}
		if status == "" || row.Status == status {
			rows = append(rows, row)
		}
	}
	if status == "waiting" {
		rows = nil // they are all above
	}
	if status != "" && status != "waiting" {
		waiting = nil
	}
	return s.render(c, http.StatusOK, "sessions", "Sessions", map[string]any{
		"Waiting": waiting, "Rows": rows, "Next": next, "App": app, "Status": status, "Statuses": sessionStatuses})
}

func (s *Server) sessionsWaiting(c echo.Context, user, app string) ([]sessionRow, error) {
	w, ok := s.cfg.Reader.(interface {
		SessionsWaiting(ctx context.Context, owner, app string) ([]projection.Session, error)
	})
	if !ok {
		return nil, nil
	}
	list, err := w.SessionsWaiting(c.Request().Context(), user, app)
	if err != nil {
		return nil, err
	}
	var rows []sessionRow
	for _, sess := range list {
		row, err := s.rowOf(c, sess)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// ownedSession is the session of the path when it is the user's; another's is
// not found, as an unknown one is.
func (s *Server) ownedSession(c echo.Context) (projection.Session, error) {
	sess, err := s.cfg.Reader.Session(c.Request().Context(), c.Param("id"))
	if err == nil && sess.Owner != signInOf(c).User {
		err = events.FieldError(events.CodeNotFound, "id", "no session %s", c.Param("id"))
	}
	return sess, err
}

// notices are what a page says after a form was sent (?done=): fixed texts, so a
// link cannot make a page say anything else.
var notices = map[string]string{
	"answered": "Answered. The turn goes on.",
	"branched": "Branched: this is the new session, which goes on from the branch point.",
	"reverted": "Reverted: the files are back as they were, and the session's next turn is told.",
	"revoked":  "Revoked: the next call it covered asks again.",
}

// shownItem is one transcript entry as the page shows it.
type shownItem struct {
	events.Item
	ProposedArguments json.RawMessage `json:"proposed_arguments,omitempty"`
	EditedBy          string          `json:"edited_by,omitempty"`
}

// sessionPage shows a session: its transcript, its turns, the questions it waits
// for, and an input box for a new turn.
func (s *Server) sessionPage(c echo.Context) error {
	return s.sessionPageWith(c, http.StatusOK, nil, nil)
}

// sessionPageWith is the session page with a refused answer's error and the form as
// it was filled in.
func (s *Server) sessionPageWith(c echo.Context, status int, refused error, form url.Values) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	// The page is as of this seq: read before anything else on it, so what it shows
	// is at least this new, and the live stream's "end" of any turn that ends after
	// it (seq > this) reloads the page. (Read after the status, a turn could end in
	// between and its end be taken as already shown.)
	lastSeq, err := s.cfg.Reader.LastSeq(ctx, sess.ID)
	if err != nil {
		return err
	}
	raw, err := s.cfg.Reader.HistoryAsRun(ctx, sess.ID)
	if err != nil {
		return err
	}
	// A page of the transcript: the newest TranscriptPage items unless ?items= says
	// where to start.
	from := max(0, len(raw)-TranscriptPage)
	if v := c.QueryParam("items"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= max(len(raw), 1) {
			return events.FieldError(events.CodeInvalid, "items", "must be an item index from 0 to %d, got %q", max(len(raw)-1, 0), v)
		}
		from = n
	}
	to := min(len(raw), from+TranscriptPage)
	items := make([]shownItem, 0, to-from)
	for _, r := range raw[from:to] {
		var it shownItem
		if err := json.Unmarshal(r, &it); err != nil {
			return err
		}
		items = append(items, it)
	}
	turns, err := s.cfg.Reader.Turns(ctx, sess.ID)
	if err != nil {
		return err
	}
	pending, err := s.cfg.Reader.PendingInterrupts(ctx, sess.ID)
	if err != nil {
		return err
	}
	st, err := s.statusOf(c, sess)
	if err != nil {
		return err
	}
	questions := make([]question, len(pending))
	for i, p := range pending {
		questions[i] = question{Interrupt: p, Choice: form.Get("choice." + p.ID), Message: form.Get("message." + p.ID),
			Notes: form.Get("notes." + p.ID), Edit: form.Get("arguments." + p.ID)}
		if p.Kind == events.InterruptBudget {
			budgetQuestion(&questions[i], form)
			continue
		}
		if questions[i].Edit == "" && len(p.Arguments) > 0 {
			questions[i].Edit = indentJSON(p.Arguments)
		}
		if gs, ok := s.cfg.Engine.(grantSuggester); ok && p.Kind != events.InterruptGuardrailReview && p.Rule != "" {
			questions[i].Grant, _ = gs.SuggestedGrant(sess.App, p.Path, p.Tool, p.Arguments)
			if g := form.Get("grant." + p.ID); g != "" {
				questions[i].Grant = g
			}
		}
		if ts, ok := s.cfg.Engine.(toolSchemas); ok && p.Kind != events.InterruptGuardrailReview {
			if schema, ok := ts.ToolParameters(sess.App, p.Path, p.Tool); ok {
				questions[i].Schema = string(schema)
			}
		}
	}
	children, err := s.cfg.Reader.Branches(ctx, sess.ID)
	if err != nil {
		return err
	}
	var mine []projection.Session
	branchedAt := map[string]int{} // turn → the branches made at its end
	for _, ch := range children {
		if ch.Owner == sess.Owner { // another user's branch is not shown
			mine = append(mine, ch)
			branchedAt[ch.ParentTurn]++
		}
	}
	// The sessions this one was branched from, oldest first.
	var ancestors []projection.Session
	for id := sess.ParentID; id != "" && len(ancestors) < 64; {
		p, err := s.cfg.Reader.Session(ctx, id)
		if err != nil || p.Owner != sess.Owner {
			break
		}
		ancestors = append([]projection.Session{p}, ancestors...)
		id = p.ParentID
	}
	pages := map[string]any{"From": from, "To": to, "Total": len(raw)}
	if from > 0 {
		pages["Earlier"] = max(0, from-TranscriptPage)
	}
	if to < len(raw) {
		pages["Later"] = to
	}
	// While a turn runs, the live section follows it from its start (at most a
	// timeline page back), so what it did before the page loaded shows too.
	liveAfter := lastSeq
	if st == "running" && len(turns) > 0 {
		liveAfter = max(turns[len(turns)-1].StartSeq-1, lastSeq-TimelinePage, 0)
	}
	grants, err := s.cfg.Turns.Grants(ctx, sess.ID)
	if err != nil {
		return err
	}
	plan, err := s.cfg.Reader.Plan(ctx, sess.ID)
	if err != nil {
		plan = nil // the page shows the rest; the plan's own route says what is wrong
	}
	var spend *fsm.SessionSpend
	if sr, ok := s.cfg.Engine.(spendReporter); ok {
		if spend, err = sr.Spend(ctx, sess.ID); err != nil {
			spend = nil // the page shows the rest; the spend route says what is wrong
		}
	}
	waitingInput := ""
	if st == "waiting" && len(turns) > 0 {
		waitingInput = turns[len(turns)-1].Input
	}
	data := map[string]any{"Spend": spend, "Plan": plan, "WaitingInput": waitingInput, "Grants": grants, "Session": sess, "Status": st, "Items": items, "Pages": pages, "LastSeq": lastSeq, "LiveAfter": liveAfter, "Turns": turns, "Pending": questions, "Message": notices[c.QueryParam("done")], "Branches": mine,
		"Ancestors": ancestors, "BranchedAt": branchedAt}
	if refused != nil {
		data["Refused"] = publicText(refused)
	}
	return s.render(c, status, "session", "Session "+sess.ID, data)
}

// runTurn starts a turn with the form's input and goes back to the session page,
// where it shows as it runs.
func (s *Server) runTurn(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	input := strings.TrimSpace(c.FormValue("input"))
	if input == "" {
		return events.FieldError(events.CodeInvalid, "input", "is empty: write what the agent should do")
	}
	out, err := s.cfg.Turns.Run(c.Request().Context(), turns.Request{Session: sess.ID, User: signInOf(c).User, Input: &input,
		Key: s.formKey(c, map[string]string{"input": input})})
	if err != nil {
		return err
	}
	out.Close()
	// The turn runs on in the engine; the session page follows it live.
	return c.Redirect(http.StatusSeeOther, "/ui/sessions/"+sess.ID)
}

// question is a pending interrupt with its answer form as it was filled in.
type question struct {
	projection.Interrupt
	Choice, Message, Notes, Edit string
	// Grant is the pattern a yes for the rest of the session would cover (empty: the
	// question cannot be answered so — the tool policy did not ask it).
	Grant string
	// Schema is the tool's arguments schema (JSON), which the page checks an edit
	// against before sending it; the server checks it again.
	Schema string
	// Budget is a budget question's figures, Extend its extension as the form
	// shows it, by field.
	Budget *projection.BudgetFigures
	Extend map[string]string
}

// toolSchemas is an engine that knows the schema of an approval's tool.
type toolSchemas interface {
	ToolParameters(app, path, tool string) (json.RawMessage, bool)
}
