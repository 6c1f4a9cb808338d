package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Deliveries is the webhook outbox as the admin routes see it.
type Deliveries interface {
	Deliveries(ctx context.Context, f projection.DeliveryFilter) ([]projection.Delivery, error)
	Delivery(ctx context.Context, id string) (projection.Delivery, error)
	Redeliver(ctx context.Context, id string, now time.Time) (projection.Delivery, error)
}

// Wake, when the deliveries have one, hears that a delivery is due now.
type waker interface{ Wake() }

type deliveryPage struct {
	Deliveries []projection.Delivery `json:"deliveries"`
	Next       string                `json:"next,omitempty"` // pass as ?after= for the next page
}

var deliveryStatuses = []projection.DeliveryStatus{projection.DeliveryPending, projection.DeliverySending, projection.DeliveryDelivered, projection.DeliveryDead}

func (s *Server) listDeliveries(c echo.Context) error {
	q := c.QueryParams()
	f := projection.DeliveryFilter{Status: projection.DeliveryStatus(q.Get("status")), Webhook: q.Get("webhook"), Session: q.Get("session_id"), After: q.Get("after"), Limit: 100}
	if f.Status != "" && !slices.Contains(deliveryStatuses, f.Status) {
		return events.FieldError(events.CodeInvalid, "status", "must be one of %v, got %q", deliveryStatuses, f.Status)
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			return events.FieldError(events.CodeInvalid, "limit", "must be an integer from 1 to 500, got %q", l)
		}
		f.Limit = n
	}
	if s.cfg.Deliveries == nil {
		return c.JSON(http.StatusOK, deliveryPage{Deliveries: []projection.Delivery{}})
	}
	list, err := s.cfg.Deliveries.Deliveries(c.Request().Context(), f)
	if err != nil {
		return err
	}
	page := deliveryPage{Deliveries: list}
	if len(list) == f.Limit {
		page.Next = list[len(list)-1].ID
	}
	return c.JSON(http.StatusOK, page)
}

func (s *Server) getDelivery(c echo.Context) error {
	if s.cfg.Deliveries == nil {
		return events.FieldError(events.CodeNotFound, "delivery_id", "no delivery %s", c.Param("delivery_id"))
	}
	d, err := s.cfg.Deliveries.Delivery(c.Request().Context(), c.Param("delivery_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func (s *Server) redeliver(c echo.Context) error {
	if s.cfg.Deliveries == nil {
		return events.FieldError(events.CodeNotFound, "delivery_id", "no delivery %s", c.Param("delivery_id"))
	}
	now := time.Now
	if s.cfg.Clock != nil {
		now = s.cfg.Clock
	}
	d, err := s.cfg.Deliveries.Redeliver(c.Request().Context(), c.Param("delivery_id"), now())
	if err != nil {
		return err
	}
	if w, ok := s.cfg.Deliveries.(waker); ok {
		w.Wake()
	}
	return c.JSON(http.StatusOK, d)
}
