// Package inspector is turnlog's web inspector: server-rendered pages under /ui/
// where reviewers answer the questions turns wait for and engineers read a session —
// its transcript, turns and audit. It signs in with the API's keys: a key becomes an
// HttpOnly, SameSite=Strict cookie whose session lives in the store (so signing out
// revokes it everywhere), every form carries a CSRF token, and every page is sent
// with a Content-Security-Policy that forbids framing and inline script.
//
// It must never accept its cookie outside /ui/ (the JSON API stays bearer-only), show
// one user another's session, write HTML that is not escaped by html/template, or act
// on a turn other than through the engine, as the REST API does.
package inspector
