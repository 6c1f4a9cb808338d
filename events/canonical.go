package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxExactInteger is the largest magnitude an integer may have in a durable record:
// 2^53, beyond which IEEE-754 doubles (and every JavaScript client) lose exactness.
const MaxExactInteger = 1 << 53

// CanonicalError says why a value cannot be written as canonical JSON and where.
type CanonicalError struct {
	Path   string // JSONPath-like location, "$" for the root
	Reason string
}

func (e *CanonicalError) Error() string {
	return fmt.Sprintf("canonical json: %s: %s", e.Path, e.Reason)
}

// AsError converts a canonical-JSON failure into an invalid-input *Error naming the field.
func (e *CanonicalError) AsError() *Error {
	return &Error{Code: CodeInvalid, Field: e.Path, Message: e.Reason}
}

// Canonicalize rewrites JSON text in turnlog's canonical form: object keys sorted
// (bytewise), no insignificant whitespace, integral numbers written as integers,
// strings escaped minimally; duplicate keys, integers beyond ±2^53 and non-finite
// numbers are refused with an error naming the path.
func Canonicalize(raw []byte) ([]byte, error) {
	p := canonParser{in: raw, path: make([]pathElem, 0, 8)}
	out, err := p.value(make([]byte, 0, len(raw)))
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.in) {
		return nil, p.fail("trailing data after the JSON value")
	}
	return out, nil
}

// Marshal encodes v with encoding/json and canonicalizes the result.
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		var uv *json.UnsupportedValueError
		if errors.As(err, &uv) {
			if p := nonFinitePath(reflect.ValueOf(v), "$"); p != "" {
				return nil, &CanonicalError{Path: p, Reason: "NaN and Inf cannot be stored"}
			}
		}
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return Canonicalize(raw)
}

// MustMarshal is Marshal for values built by turnlog itself whose shape cannot fail.
func MustMarshal(v any) []byte {
	b, err := Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// canonParser is a single-pass JSON parser that writes the canonical form as it
// goes, without building a tree. The path of the current value is a stack rendered
// only when there is an error to report.
type canonParser struct {
	in   []byte
	pos  int
	path []pathElem
	tmp  []byte // scratch for reordering an object's members
}

type pathElem struct {
	key   []byte // nil for an array index
	index int
}

func (p *canonParser) fail(reason string) *CanonicalError {
	var b strings.Builder
	b.WriteString("$")
	for _, e := range p.path {
		if e.key == nil {
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
		} else {
			b.WriteString(memberPath("", string(e.key)))
		}
	}
	return &CanonicalError{Path: b.String(), Reason: reason}
}

func (p *canonParser) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *canonParser) value(out []byte) ([]byte, error) {
	p.skipSpace()
	if p.pos >= len(p.in) {
		return nil, p.fail("malformed JSON: unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object(out)
	case c == '[':
		return p.array(out)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return appendString(out, s), nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number(out)
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(p.in)-p.pos >= len(lit) && string(p.in[p.pos:p.pos+len(lit)]) == lit {
				p.pos += len(lit)
				return append(out, lit...), nil
			}
		}
	}
	return nil, p.fail(fmt.Sprintf("malformed JSON: unexpected %q at offset %d", p.in[p.pos], p.pos))
}

// member is one key and value of an object, as a span of the output.
type member struct {
	key        []byte
	start, end int
}

func (p *canonParser) object(out []byte) ([]byte, error) {
	p.pos++ // '{'
	open := len(out)
	out = append(out, '{')
	var buf [16]member
	members := buf[:0]
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		return append(out, '}'), nil
	}
	depth := len(p.path)
	p.path = append(p.path, pathElem{})
	for {
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return nil, p.fail("malformed JSON: expected an object key")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return nil, p.fail("malformed JSON: expected ':' after an object key")
		}
		p.pos++
		if len(members) > 0 {
			out = append(out, ',')
		}
		start := len(out)
		out = appendString(out, key)
		out = append(out, ':')
		p.path[depth] = pathElem{key: key}
		if out, err = p.value(out); err != nil {
			return nil, err
		}
		members = append(members, member{key: key, start: start, end: len(out)})
		p.skipSpace()
		if p.pos >= len(p.in) {
			return nil, p.fail("malformed JSON: unterminated object")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] != '}' {
			return nil, p.fail("malformed JSON: expected ',' or '}' in an object")
		}
		p.pos++
		break
	}
	sorted := true
	for i := 1; i < len(members); i++ {
		if bytes.Compare(members[i-1].key, members[i].key) >= 0 {
			sorted = false
			break
		}
	}
	if !sorted {
		slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		for i := 1; i < len(members); i++ {
			if bytes.Equal(members[i-1].key, members[i].key) {
				p.path[depth] = pathElem{key: members[i].key}
				return nil, p.fail("duplicate key")
			}
		}
		// Rewrite the members in key order from a copy of the object's body.
		body := open + 1
		p.tmp = append(p.tmp[:0], out[body:]...)
		out = out[:body]
		for i, m := range members {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, p.tmp[m.start-body:m.end-body]...)
		}
	}
	p.path = p.path[:depth]
	return append(out, '}'), nil
}

func (p *canonParser) array(out []byte) ([]byte, error) {
	p.pos++ // '['
	out = append(out, '[')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		return append(out, ']'), nil
	}
	depth := len(p.path)
	p.path = append(p.path, pathElem{})
	for i := 0; ; i++ {
		if i > 0 {
			out = append(out, ',')
		}
		p.path[depth] = pathElem{index: i}
		var err error
		if out, err = p.value(out); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return nil, p.fail("malformed JSON: unterminated array")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] != ']' {
			return nil, p.fail("malformed JSON: expected ',' or ']' in an array")
		}
		p.pos++
		p.path = p.path[:depth]
		return append(out, ']'), nil
	}
}

// str reads a JSON string token and returns its value: a slice of the input when the
// token has no escapes, else the decoded bytes.
func (p *canonParser) str() ([]byte, error) {
	start := p.pos
	p.pos++ // '"'
	escaped := false
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			raw := p.in[start:p.pos]
			if !escaped && utf8.Valid(raw) {
				return raw[1 : len(raw)-1], nil
			}
			// Escapes are decoded, and invalid UTF-8 becomes U+FFFD, as encoding/json does.
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, p.fail("malformed JSON: bad string: " + err.Error())
			}
			return []byte(s), nil
		case c == '\\':
			escaped = true
			p.pos += 2
		case c < 0x20:
			return nil, p.fail("malformed JSON: control character in a string")
		default:
			p.pos++
		}
	}
	return nil, p.fail("malformed JSON: unterminated string")
}

// appendString writes s as a JSON string the way encoding/json does with HTML
// escaping off: the one canonical spelling of every string. Valid UTF-8 without
// characters that need escaping is copied as it is.
func appendString(out, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				return appendEscaped(out, s)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return appendEscaped(out, s)
		}
		i += size
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

func appendEscaped(out, s []byte) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(s)) // encoding a string cannot fail
	return append(out, bytes.TrimSuffix(b.Bytes(), []byte{'\n'})...)
}

var maxExact = big.NewInt(MaxExactInteger)

func (p *canonParser) number(out []byte) ([]byte, error) {
	start := p.pos
	if p.in[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	n := digits()
	if n == 0 || (n > 1 && p.in[intStart] == '0') {
		return nil, p.fail("malformed JSON: bad number")
	}
	integral := true
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		p.pos++
		integral = false
		if digits() == 0 {
			return nil, p.fail("malformed JSON: bad number")
		}
	}
	if p.pos < len(p.in) && (p.in[p.pos] == 'e' || p.in[p.pos] == 'E') {
		p.pos++
		integral = false
		if p.pos < len(p.in) && (p.in[p.pos] == '+' || p.in[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.fail("malformed JSON: bad number")
		}
	}
	text := p.in[start:p.pos]
	if integral {
		switch {
		case n <= 15: // below 10^15 < 2^53: already canonical, except "-0"
			if string(text) == "-0" {
				return append(out, '0'), nil
			}
			return append(out, text...), nil
		case n <= 18:
			v, _ := strconv.ParseInt(string(text), 10, 64)
			if v > MaxExactInteger || v < -MaxExactInteger {
				return nil, p.fail("integer " + string(text) + " is beyond ±2^53 and cannot be stored exactly")
			}
			return strconv.AppendInt(out, v, 10), nil
		}
		v, _ := new(big.Int).SetString(string(text), 10)
		if v.CmpAbs(maxExact) > 0 {
			return nil, p.fail("integer " + string(text) + " is beyond ±2^53 and cannot be stored exactly")
		}
		return append(out, v.String()...), nil
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, p.fail("number " + string(text) + " is not a finite double")
	}
	if f == math.Trunc(f) {
		if math.Abs(f) > MaxExactInteger {
			return nil, p.fail("integral number " + string(text) + " is beyond ±2^53 and cannot be stored exactly")
		}
		return strconv.AppendInt(out, int64(f), 10), nil
	}
	return appendFloat(out, f), nil
}

// appendFloat formats a non-integral double the way encoding/json (and ECMAScript)
// does: shortest round-trip digits, exponent form only below 1e-6 or from 1e21.
func appendFloat(out []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	out = strconv.AppendFloat(out, f, format, -1, 64)
	if format == 'e' { // e-09 → e-9
		if n := len(out); n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			out = out[:n-1]
		}
	}
	return out
}

func memberPath(parent, key string) string {
	simple := key != ""
	for _, r := range key {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			simple = false
			break
		}
	}
	if simple {
		return parent + "." + key
	}
	return parent + "[" + strconv.Quote(key) + "]"
}

// nonFinitePath finds where a Go value holds NaN or ±Inf, using JSON field names.
func nonFinitePath(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		return nonFinitePath(v.Elem(), path)
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return path
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name := sf.Name
			if tag := sf.Tag.Get("json"); tag != "" {
				if tag == "-" {
					continue
				}
				if n, _, _ := strings.Cut(tag, ","); n != "" {
					name = n
				}
			}
			if p := nonFinitePath(v.Field(i), memberPath(path, name)); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if p := nonFinitePath(v.Index(i), path+"["+strconv.Itoa(i)+"]"); p != "" {
				return p
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			if p := nonFinitePath(v.MapIndex(k), memberPath(path, fmt.Sprint(k.Interface()))); p != "" {
				return p
			}
		}
	}
	return ""
}
