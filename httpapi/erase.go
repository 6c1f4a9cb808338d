package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Erasures lists the receipts erasures left (see sqlite.Store.Erasures).
type Erasures interface {
	Erasures(ctx context.Context, after string, limit int) ([]projection.ErasureReceipt, error)
}

// eraseSession is DELETE /v1/sessions/{id}: the owner or an admin erases a session
// (with its branches when cascade=true) and gets the receipt.
func (s *Server) eraseSession(c echo.Context) error {
	cascade := false
	if v := c.QueryParam("cascade"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return events.FieldError(events.CodeInvalid, "cascade", "must be true or false, got %q", v)
		}
		cascade = b
	}
	id := c.Param("id")
	sess, err := s.cfg.Reader.Session(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if sess.Owner != userOf(c) && !isAdmin(c) {
		return events.Errorf(events.CodeNotFound, "session %s not found", id)
	}
	rec, err := s.cfg.Engine.EraseSession(c.Request().Context(), id, userOf(c), cascade)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rec)
}

// eraseUser is DELETE /v1/users/{id}/data (admin): everything of one user.
func (s *Server) eraseUser(c echo.Context) error {
	rec, err := s.cfg.Engine.EraseUser(c.Request().Context(), c.Param("user_id"), userOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rec)
}

type erasurePage struct {
	Erasures []projection.ErasureReceipt `json:"erasures"`
	Next     string                      `json:"next,omitempty"` // pass as ?after= for the next page
}

// listErasures is GET /v1/erasures (admin): the receipts, oldest first.
func (s *Server) listErasures(c echo.Context) error {
	limit := 100
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			return events.FieldError(events.CodeInvalid, "limit", "must be an integer from 1 to 500, got %q", l)
		}
		limit = n
	}
	page := erasurePage{Erasures: []projection.ErasureReceipt{}}
	if s.cfg.Erasures == nil {
		return c.JSON(http.StatusOK, page)
	}
	list, err := s.cfg.Erasures.Erasures(c.Request().Context(), c.QueryParam("after"), limit)
	if err != nil {
		return err
	}
	if list != nil {
		page.Erasures = list
	}
	if len(list) == limit {
		page.Next = list[len(list)-1].ID
	}
	return c.JSON(http.StatusOK, page)
}
