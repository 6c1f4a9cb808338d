package httpapi

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
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

// sameOriginOnly, in --dev (where a request needs no key), refuses a state-changing
// request a browser sent from another site, with a body or without: its Origin, when
// there is one, must be the server's own (scheme, host and port; "null" is not), and
// its Sec-Fetch-Site, when there is one, same-origin or none. A client that is not a
// browser (curl) sends neither and is let through.
func sameOriginOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			return echo.NewHTTPError(http.StatusForbidden, "in --dev mode turnlog refuses a request another site's page sent (Sec-Fetch-Site: "+events.ShortenForMessage(site, 32)+")")
		}
		if origin := r.Header.Get(echo.HeaderOrigin); origin != "" && !sameOrigin(origin, r) {
			return echo.NewHTTPError(http.StatusForbidden, "in --dev mode turnlog refuses a request another site's page sent (Origin: "+events.ShortenForMessage(origin, 64)+")")
		}
		return next(c)
	}
}

// sameOrigin says whether origin is the origin r was sent to.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.User != nil {
		return false // "null", or not an origin at all
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(withPort(u.Host, u.Scheme), withPort(r.Host, scheme))
}

// withPort is host with its scheme's default port when it names none.
func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if strings.EqualFold(scheme, "https") {
		return net.JoinHostPort(strings.Trim(host, "[]"), "443")
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}
