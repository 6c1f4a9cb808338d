package events

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits bound the shape of a JSON document that comes from outside turnlog: a
// request's body, an answer's edited arguments. Check reads the document once, in
// time linear in its size and memory linear in Depth, before anything decodes it,
// so a document that is small but deep or wide costs no more than its bytes. A zero
// field is no limit. Recorded events (fixtures, exports, a rebuild) are never
// checked against Limits: what the log holds was checked when it was written.
type Limits struct {
	// Depth is how deeply objects and arrays may nest (the document itself is 1).
	Depth int
	// Keys is how many members one object may have.
	Keys int
	// String is how many bytes one string or key may take, as written.
	String int
	// Array is how many elements one array may have.
	Array int
	// NoNUL refuses \u0000 in strings and keys: PostgreSQL's JSON functions cannot
	// read it, so no store of turnlog's keeps it.
	NoNUL bool
}

// DefaultLimits are the request limits of turnlog's HTTP API and inspector.
var DefaultLimits = Limits{Depth: 64, Keys: 1000, String: 1 << 20, Array: 10000, NoNUL: true}

// StoreLimits are what every store of turnlog can keep in an event's data: SQLite's
// JSON functions refuse documents nested 1,000 deep or more, PostgreSQL's refuse
// \u0000. A model's output or a tool's result is checked against them before it is
// appended.
var StoreLimits = Limits{Depth: 999, NoNUL: true}

// limitFrame is one open object or array while Check reads.
type limitFrame struct {
	object    bool
	expectKey bool
	count     int // members seen (object) or commas seen (array)
	key       [2]int
}

// Check says whether raw keeps within l. Malformed JSON is not its to report: what
// it cannot read it passes on to the decoder, which refuses it. The error names the
// path of the value past a limit (with long keys shortened).
func (l Limits) Check(raw []byte) error {
	var stack []limitFrame
	fail := func(format string, args ...any) error {
		return FieldError(CodeInvalid, limitPath(raw, stack), format, args...)
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		top := len(stack) - 1
		switch c {
		case '"':
			end, nul := scanJSONString(raw, i)
			isKey := top >= 0 && stack[top].object && stack[top].expectKey
			if isKey {
				f := &stack[top]
				f.key, f.expectKey = [2]int{i, end}, false
				if f.count++; l.Keys > 0 && f.count > l.Keys {
					return fail("has more than %d members", l.Keys)
				}
			}
			if l.String > 0 && end-i-2 > l.String {
				if isKey {
					return fail("is a key longer than %d bytes", l.String)
				}
				return fail("is a string longer than %d bytes", l.String)
			}
			if nul && l.NoNUL {
				return fail("holds \\u0000 (a NUL character), which turnlog's log cannot keep")
			}
			i = end
			continue
		case '{', '[':
			if l.Depth > 0 && len(stack) >= l.Depth {
				return fail("is nested deeper than %d levels of objects and arrays", l.Depth)
			}
			stack = append(stack, limitFrame{object: c == '{', expectKey: c == '{', key: [2]int{-1, -1}})
		case '}', ']':
			if top >= 0 {
				stack = stack[:top]
			}
		case ',':
			if top >= 0 {
				f := &stack[top]
				if f.object {
					f.expectKey = true
				} else if f.count++; l.Array > 0 && f.count >= l.Array {
					return fail("has more than %d elements", l.Array)
				}
			}
		}
		i++
	}
	return nil
}

// scanJSONString returns the offset just past the string that starts at raw[start]
// (a quote), and whether it holds the escape \u0000.
func scanJSONString(raw []byte, start int) (end int, nul bool) {
	for i := start + 1; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			return i + 1, nul
		case '\\':
			if i+5 < len(raw) && raw[i+1] == 'u' && string(raw[i+2:i+6]) == "0000" {
				nul = true
			}
			i++ // the escaped character is never the string's end
		}
	}
	return len(raw), nul
}

// limitPath renders where Check stopped, as CheckStrict names fields: a.b[2].c.
func limitPath(raw []byte, stack []limitFrame) string {
	var b strings.Builder
	for _, f := range stack {
		if !f.object {
			b.WriteString("[" + strconv.Itoa(f.count) + "]")
			continue
		}
		if f.key[0] < 0 {
			break // an object whose first key is not read yet
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(shownKey(raw[f.key[0]:f.key[1]]))
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// shownKey is a key as an error shows it: decoded, and shortened past 64 characters.
func shownKey(quoted []byte) string {
	var k string
	if json.Unmarshal(quoted, &k) != nil {
		k = strings.Trim(string(quoted), `"`)
	}
	return ShownName(k)
}

// ShownName is a key or an id as a message shows it: shortened past 64 characters,
// and quoted when it holds a control character (a NUL never reaches a message).
func ShownName(s string) string {
	s = ShortenForMessage(s, 64)
	if strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}

// ShortenForMessage cuts s to at most n characters for an error message, saying how
// long it was: a message never echoes a long input whole.
func ShortenForMessage(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := 0
	for i := 0; i < n; i++ {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
