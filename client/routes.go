package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Healthz says whether the process answers.
func (c *Client) Healthz(ctx context.Context) error {
	_, err := c.call(ctx, http.MethodGet, "/healthz", nil, nil, nil)
	return err
}

// Readyz says whether the server is ready (its store reachable and current).
func (c *Client) Readyz(ctx context.Context) error {
	_, err := c.call(ctx, http.MethodGet, "/readyz", nil, nil, nil)
	return err
}

// Metrics returns the Prometheus text exposition.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) { return c.raw(ctx, "/metrics") }

// OpenAPI returns the API's description, YAML.
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) { return c.raw(ctx, "/openapi.yaml") }

// CreateSession creates a session of app; metadata, when set, is a JSON object.
func (c *Client) CreateSession(ctx context.Context, app string, metadata json.RawMessage, opts ...Option) (Session, error) {
	var out Session
	_, err := c.call(ctx, http.MethodPost, "/v1/sessions", struct {
		App      string          `json:"app"`
		Metadata json.RawMessage `json:"metadata,omitempty"`
	}{app, metadata}, &out, opts)
	return out, err
}

// ListSessions lists the caller's sessions, newest first: app filters, limit caps a
// page, cursor is the previous page's NextCursor.
func (c *Client) ListSessions(ctx context.Context, app string, limit int, cursor string) (SessionPage, error) {
	q := url.Values{}
	if app != "" {
		q.Set("app", app)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out SessionPage
	_, err := c.call(ctx, http.MethodGet, withQuery("/v1/sessions", q), nil, &out, nil)
	return out, err
}

// Session returns a session's summary.
func (c *Client) Session(ctx context.Context, id string) (SessionSummary, error) {
	var out SessionSummary
	_, err := c.call(ctx, http.MethodGet, sessionPath(id), nil, &out, nil)
	return out, err
}

// RunTurn runs a turn (Input) or resumes a suspended one (ResumeMap) and returns
// its outcome. A background turn or a queued input answers 202: then only TurnID,
// Status (running or queued), Location and Position are set.
func (c *Client) RunTurn(ctx context.Context, id string, req TurnRequest, opts ...Option) (TurnResult, error) {
	req.Stream = false
	var out TurnResult
	_, err := c.call(ctx, http.MethodPost, sessionPath(id, "turns"), req, &out, opts)
	return out, err
}

// StreamTurn runs or resumes a turn and streams it (SSE). Read it with Next; close it
// when done. A stream cut short is continued by calling StreamTurn again with the
// same request, the same IdempotencyKey and LastEventID(the last id read): the turn is
// never started twice (a new turn's request continues without a key too; a resume's
// needs one). A queued input (on_busy: enqueue) answers *Accepted instead.
func (c *Client) StreamTurn(ctx context.Context, id string, req TurnRequest, opts ...Option) (*Stream, error) {
	req.Stream = true
	r, err := c.request(ctx, http.MethodPost, sessionPath(id, "turns"), req, opts)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Accept", "text/event-stream")
	return c.stream(r)
}

// Turns lists a session's turns in start order.
func (c *Client) Turns(ctx context.Context, id string) ([]Turn, error) {
	var out struct {
		Turns []Turn `json:"turns"`
	}
	_, err := c.call(ctx, http.MethodGet, sessionPath(id, "turns"), nil, &out, nil)
	return out.Turns, err
}

// Turn returns the turn resource; wait > 0 holds the answer until the turn ends, at
// most that long (at most 60s).
func (c *Client) Turn(ctx context.Context, id, turn string, wait time.Duration) (TurnResult, error) {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	var out TurnResult
	_, err := c.call(ctx, http.MethodGet, withQuery(sessionPath(id, "turns", url.PathEscape(turn)), q), nil, &out, nil)
	return out, err
}

// FollowTurn streams one turn from the log, from its start or after LastEventID,
// ending with its end.
func (c *Client) FollowTurn(ctx context.Context, id, turn string, opts ...Option) (*Stream, error) {
	r, err := c.request(ctx, http.MethodGet, sessionPath(id, "turns", url.PathEscape(turn), "stream"), nil, opts)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Accept", "text/event-stream")
	return c.stream(r)
}

// CancelTurn cancels a running (or suspended) turn, with a reason for the log.
func (c *Client) CancelTurn(ctx context.Context, id, turn, reason string, opts ...Option) (Turn, error) {
	var out Turn
	_, err := c.call(ctx, http.MethodPost, sessionPath(id, "turns", url.PathEscape(turn), "cancel"), struct {
		Reason string `json:"reason,omitempty"`
	}{reason}, &out, opts)
	return out, err
}

// TurnFiles is what each of the turn's calls changed in its workspace.
func (c *Client) TurnFiles(ctx context.Context, id, turn string) ([]FilesChanged, error) {
	var out struct {
		Calls []FilesChanged `json:"calls"`
	}
	_, err := c.call(ctx, http.MethodGet, sessionPath(id, "turns", url.PathEscape(turn), "files"), nil, &out, nil)
	return out.Calls, err
}

// RevertTurn puts every file the turn changed back as it was before it; with force,
// paths changed since are overwritten (else a 409 revert_conflict names them, see
// Error.Conflicts, and nothing changes).
func (c *Client) RevertTurn(ctx context.Context, id, turn string, force bool, opts ...Option) (Revert, error) {
	return c.revert(ctx, sessionPath(id, "turns", url.PathEscape(turn), "revert"), "", force, opts)
}

// RevertSession undoes every turn after toTurn, newest first, as one change.
func (c *Client) RevertSession(ctx context.Context, id, toTurn string, force bool, opts ...Option) (Revert, error) {
	return c.revert(ctx, sessionPath(id, "revert"), toTurn, force, opts)
}

// UndoRevert undoes a revert: its files as the revert found them.
func (c *Client) UndoRevert(ctx context.Context, id, revert string, force bool, opts ...Option) (Revert, error) {
	return c.revert(ctx, sessionPath(id, "reverts", url.PathEscape(revert), "revert"), "", force, opts)
}

func (c *Client) revert(ctx context.Context, path, toTurn string, force bool, opts []Option) (Revert, error) {
	var out Revert
	_, err := c.call(ctx, http.MethodPost, path, struct {
		ToTurn string `json:"to_turn,omitempty"`
		Force  bool   `json:"force,omitempty"`
	}{toTurn, force}, &out, opts)
	return out, err
}

// Compact has the active agent summarise the conversation now.
func (c *Client) Compact(ctx context.Context, id string, opts ...Option) (TurnResult, error) {
	var out TurnResult
	_, err := c.call(ctx, http.MethodPost, sessionPath(id, "compact"), struct{}{}, &out, opts)
	return out, err
}

// History returns the committed conversation.
func (c *Client) History(ctx context.Context, id string) ([]Item, error) {
	var out struct {
		Items []Item `json:"items"`
	}
	_, err := c.call(ctx, http.MethodGet, sessionPath(id, "history"), nil, &out, nil)
	return out.Items, err
}

// Interrupts lists the questions a session's turn waits for.
func (c *Client) Interrupts(ctx context.Context, id string) ([]PendingInterrupt, error) {
	var out struct {
		Interrupts []PendingInterrupt `json:"interrupts"`
	}
	_, err := c.call(ctx, http.MethodGet, sessionPath(id, "interrupts"), nil, &out, nil)
	return out.Interrupts, err
}

// Audit lists what a session's tools did and what was decided about them.
func (c *Client) Audit(ctx context.Context, id string) ([]AuditEntry, error) {
	var out struct {
		Audit []AuditEntry `json:"audit"`
	}
	_, err := c.call(ctx, http.MethodGet, sessionPath(id, "audit"), nil, &out, nil)
	return out.Audit, err
}

// Grants lists what people said yes to for the rest of a session.
func (c *Client) Grants(ctx context.Context, id string) ([]Grant, error) {
	var out struct {
		Grants []Grant `json:"grants"`
	}
	_, err := c.call(ctx, http.MethodGet, sessionPath(id, "grants"), nil, &out, nil)
	return out.Grants, err
}

// Plan is what the agent thinks it is doing: the session's latest update_plan (nil:
// none was set).
func (c *Client) Plan(ctx context.Context, id string) (*Plan, error) {
	var out struct {
		Plan *Plan `json:"plan"`
	}
	_, err := c.call(ctx, http.MethodGet, sessionPath(id, "plan"), nil, &out, nil)
	return out.Plan, err
}

// Spend is what a session's model calls spent and its budgets against it.
func (c *Client) Spend(ctx context.Context, id string) (*Spend, error) {
	var out Spend
	_, err := c.call(ctx, http.MethodGet, sessionPath(id, "spend"), nil, &out, nil)
	return &out, err
}

// RevokeGrant ends a grant for the rest of the session.
func (c *Client) RevokeGrant(ctx context.Context, id, grant string) (Grant, error) {
	var out Grant
	_, err := c.call(ctx, http.MethodDelete, sessionPath(id, "grants", url.PathEscape(grant)), nil, &out, nil)
	return out, err
}

// Events returns a session's events after seq.
func (c *Client) Events(ctx context.Context, id string, after int64) ([]Event, error) {
	var out struct {
		Events []Event `json:"events"`
	}
	_, err := c.call(ctx, http.MethodGet, withQuery(sessionPath(id, "events"), url.Values{"after": {strconv.FormatInt(after, 10)}}), nil, &out, nil)
	return out.Events, err
}

// FollowEvents streams a session's events after seq, live, until ctx ends: each
// StreamEvent's Name is the event type and its Data the Event.
func (c *Client) FollowEvents(ctx context.Context, id string, after int64) (*Stream, error) {
	r, err := c.request(ctx, http.MethodGet, withQuery(sessionPath(id, "events"), url.Values{"after": {strconv.FormatInt(after, 10)}}), nil, nil)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Accept", "text/event-stream")
	return c.stream(r)
}

// BranchPoints lists a session's committed turn ends and the branches made there.
func (c *Client) BranchPoints(ctx context.Context, id string) (BranchPoints, error) {
	var out BranchPoints
	_, err := c.call(ctx, http.MethodGet, sessionPath(id, "branch-points"), nil, &out, nil)
	return out, err
}

// Branch makes a new session from a committed turn end of id.
func (c *Client) Branch(ctx context.Context, id string, at BranchRequest, opts ...Option) (Session, error) {
	var out Session
	_, err := c.call(ctx, http.MethodPost, sessionPath(id, "branches"), at, &out, opts)
	return out, err
}

// Export returns the session as a fixture: one event a line (NDJSON).
func (c *Client) Export(ctx context.Context, id string) ([]byte, error) {
	return c.raw(ctx, sessionPath(id, "export"))
}

// Deliveries lists webhook deliveries, newest first (an admin key).
func (c *Client) Deliveries(ctx context.Context, f DeliveryFilter) (DeliveryPage, error) {
	q := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "webhook": f.Webhook, "session_id": f.SessionID, "after": f.After} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out DeliveryPage
	_, err := c.call(ctx, http.MethodGet, withQuery("/v1/webhooks/deliveries", q), nil, &out, nil)
	return out, err
}

// Delivery returns one webhook delivery (an admin key).
func (c *Client) Delivery(ctx context.Context, id string) (Delivery, error) {
	var out Delivery
	_, err := c.call(ctx, http.MethodGet, "/v1/webhooks/deliveries/"+url.PathEscape(id), nil, &out, nil)
	return out, err
}

// Redeliver sends a dead letter again (an admin key).
func (c *Client) Redeliver(ctx context.Context, id string) (Delivery, error) {
	var out Delivery
	_, err := c.call(ctx, http.MethodPost, "/v1/webhooks/deliveries/"+url.PathEscape(id)+"/redeliver", nil, &out, nil)
	return out, err
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// EraseSession erases a session (its owner's key or an admin key); cascade erases
// its branches too, which are refused otherwise (409).
func (c *Client) EraseSession(ctx context.Context, id string, cascade bool) (ErasureReceipt, error) {
	q := url.Values{}
	if cascade {
		q.Set("cascade", "true")
	}
	var out ErasureReceipt
	_, err := c.call(ctx, http.MethodDelete, withQuery("/v1/sessions/"+url.PathEscape(id), q), nil, &out, nil)
	return out, err
}

// EraseUser erases everything of one user (an admin key).
func (c *Client) EraseUser(ctx context.Context, user string) (ErasureReceipt, error) {
	var out ErasureReceipt
	_, err := c.call(ctx, http.MethodDelete, "/v1/users/"+url.PathEscape(user)+"/data", nil, &out, nil)
	return out, err
}

// Erasures lists the receipts erasures left, oldest first (an admin key); after is
// the Next of the previous page ("" for the first).
func (c *Client) Erasures(ctx context.Context, after string, limit int) (ErasurePage, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out ErasurePage
	_, err := c.call(ctx, http.MethodGet, withQuery("/v1/erasures", q), nil, &out, nil)
	return out, err
}
