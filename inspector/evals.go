package inspector

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/evals"
)

// evalRunsShown bounds the eval runs the page shows, and evalPages the pages of the
// user's sessions it looks through for them.
const (
	evalRunsShown = 50
	evalPages     = 20
)

// evalsPage: GET /ui/evals — the signed-in user's eval runs (turnlog eval --as them),
// newest first: each suite's verdict and its cases' passes, tokens and cost, and each
// run of a case's session one click away.
func (s *Server) evalsPage(c echo.Context) error {
	ctx := c.Request().Context()
	user := signInOf(c).User
	var runs []*evals.Report
	var after time.Time
	afterID := ""
	for range evalPages {
		page, err := s.cfg.Reader.SessionPage(ctx, user, "", after, afterID, PageSize)
		if err != nil {
			return err
		}
		for _, sess := range page {
			run := gjson.GetBytes(sess.Metadata, "eval_run").String()
			// The log of a run is the session named after it: metadata alone, which
			// anyone may write, names no one's run.
			if sess.ID != evals.LogSession(run) || len(runs) == evalRunsShown {
				continue
			}
			rep, err := evals.ReportOf(ctx, s.cfg.Reader, run)
			if err != nil {
				continue // a log that reads as no run is no run to show
			}
			runs = append(runs, rep)
		}
		if len(page) < PageSize || len(runs) == evalRunsShown {
			break
		}
		last := page[len(page)-1]
		after, afterID = last.CreatedAt, last.ID
	}
	return s.render(c, http.StatusOK, "evals", "Evals", map[string]any{"Runs": runs, "User": user})
}
