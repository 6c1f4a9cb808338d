package inspector

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

const (
	cookieName = "turnlog_ui"
	signInKey  = "turnlog.ui.signin"
	csrfField  = "csrf"
)

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashOf is a cookie's or key's sha256, hex: what the store keeps of it.
func hashOf(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// apiKey is who a key's holder is, found by the key's hash.
type apiKey struct {
	user  string
	admin bool
}

// secure says whether the cookie must be Secure: the public URL is https.
func (s *Server) secure() bool {
	u, err := url.Parse(s.cfg.PublicURL)
	return err == nil && u.Scheme == "https"
}

// signedIn finds the request's sign-in from its cookie; without one it sends the
// browser to the sign-in form. Under --dev every request is the user "dev".
func (s *Server) signedIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Dev {
			c.Set(signInKey, projection.UISession{User: "dev", Admin: len(s.cfg.Keys) == 0, CSRF: s.devCSRF})
			return next(c)
		}
		ck, err := c.Cookie(cookieName)
		if err == nil && ck.Value != "" {
			u, err := s.liveSignIn(c.Request().Context(), ck.Value)
			if err == nil {
				c.Set(signInKey, u)
				return next(c)
			}
			if !events.IsCode(err, events.CodeNotFound) {
				return err
			}
		}
		if c.Request().Method != http.MethodGet {
			return echo.NewHTTPError(http.StatusUnauthorized, "sign in first")
		}
		return c.Redirect(http.StatusSeeOther, "/ui/signin?next="+url.QueryEscape(c.Request().URL.RequestURI()))
	}
}

// liveSignIn is the sign-in of a cookie: stored, not revoked nor expired, and
// made with a key the server still has, for the same user; its admin role is the
// key's now. Errors: not_found.
func (s *Server) liveSignIn(ctx context.Context, cookie string) (projection.UISession, error) {
	u, err := s.cfg.SignIns.UISession(ctx, hashOf(cookie), s.cfg.Clock())
	if err != nil {
		return u, err
	}
	k, ok := s.keys[u.KeyHash]
	if !ok || k.user != u.User {
		return projection.UISession{}, events.Errorf(events.CodeNotFound, "the key this sign-in was made with is no longer one of the server's")
	}
	u.Admin = k.admin
	return u, nil
}

// checkCSRF refuses a form post that does not carry its sign-in's token.
func (s *Server) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := parseForm(c.Request()); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return events.FieldError(events.CodeInvalid, "form", "is larger than %d MiB", tooBig.Limit>>20)
			}
			return events.FieldError(events.CodeInvalid, "form", "%v", err)
		}
		u, _ := c.Get(signInKey).(projection.UISession)
		got := c.FormValue(csrfField)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(u.CSRF)) != 1 {
			return echo.NewHTTPError(http.StatusForbidden, "the form's CSRF token is missing or wrong: reload the page and try again")
		}
		return next(c)
	}
}

// parseForm reads a post's form, urlencoded or multipart (file parts beyond 8 MiB of
// memory go to temporary files, within the body's cap).
func parseForm(r *http.Request) error {
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return r.ParseMultipartForm(8 << 20)
	}
	return r.ParseForm()
}

func (s *Server) signInForm(c echo.Context) error {
	if s.cfg.Dev {
		return c.Redirect(http.StatusSeeOther, "/ui/")
	}
	return s.render(c, http.StatusOK, "signin", "Sign in", map[string]any{"Next": safeNext(c.QueryParam("next"))})
}

// safeNext keeps a redirect after sign-in inside the inspector.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/ui/"
	}
	return next
}

// signIn turns an API key into a sign-in: a cookie for /ui/ only, its session in the
// store.
func (s *Server) signIn(c echo.Context) error {
	if s.cfg.Dev {
		return c.Redirect(http.StatusSeeOther, "/ui/")
	}
	key := strings.TrimSpace(c.FormValue("key"))
	var user string
	var admin bool
	given := sha256.Sum256([]byte(key)) // digests of equal length: no timing says how long a key is
	for digest, k := range s.keys {
		if known, _ := hex.DecodeString(digest); subtle.ConstantTimeCompare(known, given[:]) == 1 {
			user, admin = k.user, k.admin
		}
	}
	next := safeNext(c.FormValue("next"))
	if user == "" {
		return s.render(c, http.StatusUnauthorized, "signin", "Sign in", map[string]any{"Next": next, "Error": "That API key is not one this server knows."})
	}
	cookie := randomToken()
	now := s.cfg.Clock()
	if err := s.cfg.SignIns.CreateUISession(c.Request().Context(), projection.UISession{IDHash: hashOf(cookie), KeyHash: hashOf(key), User: user, Admin: admin,
		CSRF: randomToken(), CreatedAt: now, ExpiresAt: now.Add(s.cfg.SignInTTL)}); err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: cookieName, Value: cookie, Path: "/ui/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.secure(), Expires: now.Add(s.cfg.SignInTTL)})
	return c.Redirect(http.StatusSeeOther, next)
}

// signOut revokes the sign-in in the store, so its cookie stops working everywhere.
func (s *Server) signOut(c echo.Context) error {
	if ck, err := c.Cookie(cookieName); err == nil && !s.cfg.Dev {
		if err := s.cfg.SignIns.RevokeUISession(c.Request().Context(), hashOf(ck.Value), s.cfg.Clock()); err != nil {
			return err
		}
	}
	c.SetCookie(&http.Cookie{Name: cookieName, Value: "", Path: "/ui/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(), MaxAge: -1})
	return c.Redirect(http.StatusSeeOther, "/ui/signin")
}
