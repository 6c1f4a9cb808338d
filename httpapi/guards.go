package httpapi

import (
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// requireJSON refuses a request that carries a body in anything but JSON (415): a
// form or text/plain POST is what a browser sends cross-origin without asking, so
// turnlog never reads one. Body-less POSTs (cancel, compact) need no Content-Type.
func requireJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method == http.MethodGet || r.Method == http.MethodHead || (r.ContentLength == 0 && len(r.TransferEncoding) == 0) {
			return next(c)
		}
		mt, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
		if err != nil || mt != echo.MIMEApplicationJSON {
			return echo.NewHTTPError(http.StatusUnsupportedMediaType, "a request body must be sent as Content-Type: application/json")
		}
		return next(c)
	}
}

// loopbackHostOnly, in --dev, answers only requests whose Host is a loopback name or
// address: a page elsewhere that rebinds its own name to 127.0.0.1 gets nothing from
// a server that needs no key.
func loopbackHostOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		host := c.Request().Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		ip := net.ParseIP(host)
		if !(strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()) {
			return echo.NewHTTPError(http.StatusMisdirectedRequest, "in --dev mode turnlog answers only requests to a loopback host (localhost, 127.0.0.1, [::1]), not "+c.Request().Host)
		}
		return next(c)
	}
}
