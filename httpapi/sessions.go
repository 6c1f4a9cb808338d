package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

type createSessionRequest struct {
	App      string          `json:"app"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

func (s *Server) createSession(c echo.Context) error {
	var req createSessionRequest
	raw, err := s.readBody(c)
	if err != nil {
		return err
	}
	if err := decodeRaw(raw, &req); err != nil {
		return err
	}
	if req.App == "" {
		return events.FieldError(events.CodeInvalid, "app", "is required")
	}
	sess, err := s.turns.CreateSession(c.Request().Context(), keyOf(c, raw), req.App, req.Metadata)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, sess)
}

// ownedSession loads a session the caller owns; another user's session is not found.
func (s *Server) ownedSession(c echo.Context) (projection.Session, error) {
	id := c.Param("id")
	sess, err := s.cfg.Reader.Session(c.Request().Context(), id)
	if err != nil {
		return sess, err
	}
	if sess.Owner != userOf(c) {
		return sess, events.Errorf(events.CodeNotFound, "session %s not found", id)
	}
	return sess, nil
}

const (
	defaultPageSize = 20
	maxPageSize     = 100
)

type sessionPage struct {
	Sessions   []projection.Session `json:"sessions"`
	NextCursor string               `json:"next_cursor,omitempty"`
}

func (s *Server) listSessions(c echo.Context) error {
	limit := defaultPageSize
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return events.FieldError(events.CodeInvalid, "limit", "must be an integer from 1 to %d, got %q", maxPageSize, v)
		}
		limit = n
	}
	var afterCreated time.Time
	afterID := ""
	if v := c.QueryParam("cursor"); v != "" {
		raw, err := base64.RawURLEncoding.DecodeString(v)
		created, id, ok := strings.Cut(string(raw), "|")
		t, terr := time.Parse(time.RFC3339Nano, created)
		if err != nil || !ok || terr != nil || id == "" {
			return events.FieldError(events.CodeInvalid, "cursor", "is not a cursor this API returned")
		}
		afterCreated, afterID = t, id
	}
	page, err := s.cfg.Reader.SessionPage(c.Request().Context(), userOf(c), c.QueryParam("app"), afterCreated, afterID, limit+1)
	if err != nil {
		return err
	}
	out := sessionPage{Sessions: page}
	if len(page) > limit {
		out.Sessions = page[:limit]
		last := page[limit-1]
		out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(last.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + last.ID))
	}
	if out.Sessions == nil {
		out.Sessions = []projection.Session{}
	}
	return c.JSON(http.StatusOK, out)
}

type sessionSummary struct {
	projection.Session
	Status string          `json:"status"` // idle, running (a turn in flight) or waiting (a turn waits for people: see /interrupts)
	Queued int             `json:"queued"` // inputs waiting to run after it (on_busy: enqueue)
	Parent *branchOriginal `json:"parent"`
}

type branchOriginal struct {
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
	TurnID    string `json:"turn_id"`
}

func (s *Server) getSession(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	out := sessionSummary{Session: sess, Status: "idle"}
	t, err := s.cfg.Reader.LastTurn(c.Request().Context(), sess.ID)
	switch {
	case err == nil && t.Status == projection.TurnRunning:
		out.Status = "running"
	case err == nil && t.Status == projection.TurnSuspended:
		out.Status = "waiting" // a new turn is refused until every interrupt is answered
	case err != nil && !events.IsCode(err, events.CodeNotFound):
		return err
	}
	if sess.ParentID != "" {
		out.Parent = &branchOriginal{SessionID: sess.ParentID, Seq: sess.ParentSeq, TurnID: sess.ParentTurn}
	}
	queue, err := s.cfg.Engine.Queue(c.Request().Context(), sess.ID)
	if err != nil {
		return err
	}
	out.Queued = len(queue)
	return c.JSON(http.StatusOK, out)
}

func (s *Server) history(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	items, err := s.cfg.Reader.HistoryAsRun(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	// The stored items are canonical JSON already: write them as they are.
	n := len(`{"items":[]}`)
	for _, it := range items {
		n += len(it) + 1
	}
	body := make([]byte, 0, n)
	body = append(body, `{"items":[`...)
	for i, it := range items {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, it...)
	}
	body = append(body, "]}"...)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

func (s *Server) interrupts(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	pending, err := s.cfg.Reader.PendingInterrupts(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	out := make([]pendingInterrupt, len(pending))
	for i, p := range pending {
		out[i].Interrupt = p
		if p.Kind == events.InterruptToolApproval && p.Rule != "" {
			out[i].Grant, _ = s.cfg.Engine.SuggestedGrant(sess.App, p.Path, p.Tool, p.Arguments)
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"interrupts": out})
}

// pendingInterrupt is a question waiting for a person, with the pattern a yes for the
// rest of the session would cover when the tool policy asked it.
type pendingInterrupt struct {
	projection.Interrupt
	Grant string `json:"grant,omitempty"`
}

type branchPoint struct {
	TurnID      string     `json:"turn_id"`
	Seq         int64      `json:"seq"`
	CommittedAt *time.Time `json:"committed_at"`
	Agent       string     `json:"agent"`
	Branches    []string   `json:"branches"`
}

func (s *Server) branchPoints(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	turns, err := s.cfg.Reader.Turns(ctx, sess.ID)
	if err != nil {
		return err
	}
	branches, err := s.cfg.Reader.Branches(ctx, sess.ID)
	if err != nil {
		return err
	}
	bySeq := map[int64][]string{}
	for _, b := range branches {
		if b.Owner == userOf(c) { // another user's branch is invisible here too
			bySeq[b.ParentSeq] = append(bySeq[b.ParentSeq], b.ID)
		}
	}
	points := []branchPoint{}
	for _, t := range turns {
		if t.Status != projection.TurnCompleted {
			continue
		}
		ids := bySeq[t.EndSeq]
		if ids == nil {
			ids = []string{}
		}
		points = append(points, branchPoint{TurnID: t.ID, Seq: t.EndSeq, CommittedAt: t.EndedAt, Agent: t.EndAgent, Branches: ids})
	}
	out := map[string]any{"session_id": sess.ID, "branch_points": points, "parent": nil}
	if sess.ParentID != "" {
		out["parent"] = branchOriginal{SessionID: sess.ParentID, Seq: sess.ParentSeq, TurnID: sess.ParentTurn}
	}
	return c.JSON(http.StatusOK, out)
}

type branchRequest struct {
	AtTurn   string          `json:"at_turn,omitempty"`
	AtSeq    int64           `json:"at_seq,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Files    string          `json:"files,omitempty"`
}

func (s *Server) createBranch(c echo.Context) error {
	var req branchRequest
	raw, err := s.readBody(c)
	if err != nil {
		return err
	}
	if err := decodeRaw(raw, &req); err != nil {
		return err
	}
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	if req.AtSeq < 0 {
		return events.FieldError(events.CodeInvalid, "at_seq", "must be positive")
	}
	sess, err := s.turns.Branch(c.Request().Context(), keyOf(c, raw), c.Param("id"), fsm.BranchPoint{Turn: req.AtTurn, Seq: req.AtSeq, Files: req.Files}, req.Metadata)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, sess)
}

func (s *Server) export(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	evs, err := fsm.Recording(c.Request().Context(), s.cfg.Reader, c.Param("id"))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentType, "application/x-ndjson")
	c.Response().WriteHeader(http.StatusOK)
	return events.WriteJSONL(c.Response(), evs)
}

// audit lists what the session's tools did and what was decided about them.
func (s *Server) audit(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	entries, err := s.cfg.Reader.Audit(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"audit": entries})
}
