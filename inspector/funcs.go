package inspector

import (
	"bytes"
	"encoding/json"
	"html/template"
	"strings"
	"time"
)

// funcs are the templates' helpers; none of them returns HTML, so html/template
// escapes everything they give.
var funcs = template.FuncMap{
	"eqs":   func(a, b string) bool { return a == b },
	"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"took": func(start time.Time, end *time.Time) string {
		if end == nil { // running, or waiting for people: the status says which
			return "not ended"
		}
		return end.Sub(start).Round(time.Millisecond).String()
	},
	"join": func(s []string) string { return strings.Join(s, " → ") },
	"json": indentJSON,
	// formKey is a form's Idempotency-Key: fresh for every form a page shows, so
	// the same form sent twice (a double click, a resent POST) acts once.
	"formKey": randomToken,
}

// indentJSON indents JSON, every number as written.
func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}
