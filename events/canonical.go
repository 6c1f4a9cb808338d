package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
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
	p := canonParser{in: raw}
	out := make([]byte, 0, len(raw))
	out, err := p.value(out)
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
// goes. The path of the current value is kept as a stack and rendered only on error.
type canonParser struct {
	in   []byte
	pos  int
	path []string // ".key", `["odd key"]` or "[3]" per level
}

func (p *canonParser) fail(reason string) *CanonicalError {
	return &CanonicalError{Path: "$" + strings.Join(p.path, ""), Reason: reason}
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
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.in[p.pos:], []byte(lit)) {
				p.pos += len(lit)
				return append(out, lit...), nil
			}
		}
	}
	return nil, p.fail(fmt.Sprintf("malformed JSON: unexpected %q at offset %d", p.in[p.pos], p.pos))
}

type member struct {
	key string
	val []byte
}

func (p *canonParser) object(out []byte) ([]byte, error) {
	p.pos++ // '{'
	var members []member
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		return append(out, '{', '}'), nil
	}
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
		p.path = append(p.path, memberPath("", key))
		val, err := p.value(nil)
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		members = append(members, member{key, val})
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
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			if m.key == members[i-1].key {
				p.path = append(p.path, memberPath("", m.key))
				return nil, p.fail("duplicate key")
			}
			out = append(out, ',')
		}
		out = appendString(out, m.key)
		out = append(out, ':')
		out = append(out, m.val...)
	}
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
	for i := 0; ; i++ {
		if i > 0 {
			out = append(out, ',')
		}
		p.path = append(p.path, "["+strconv.Itoa(i)+"]")
		var err error
		if out, err = p.value(out); err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
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
		return append(out, ']'), nil
	}
}

// str reads a JSON string token and returns its value.
func (p *canonParser) str() (string, error) {
	start := p.pos
	p.pos++ // '"'
	simple := true
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			raw := p.in[start:p.pos]
			if simple {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", p.fail("malformed JSON: bad string: " + err.Error())
			}
			return s, nil
		case c == '\\':
			simple = false
			p.pos += 2
		case c < 0x20:
			return "", p.fail("malformed JSON: control character in a string")
		case c >= utf8.RuneSelf:
			simple = false
			p.pos++
		default:
			p.pos++
		}
	}
	return "", p.fail("malformed JSON: unterminated string")
}

// appendString writes s as a JSON string the way encoding/json does with HTML
// escaping off: the one canonical spelling of every string.
func appendString(out []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		out = append(out, '"')
		out = append(out, s...)
		return append(out, '"')
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
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
	if n := digits(); n == 0 || (n > 1 && p.in[intStart] == '0') {
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
	s := string(p.in[start:p.pos])
	if integral {
		if len(s) <= 16 { // fits in int64 without question
			n, _ := strconv.ParseInt(s, 10, 64)
			if n > MaxExactInteger || n < -MaxExactInteger {
				return nil, p.fail("integer " + s + " is beyond ±2^53 and cannot be stored exactly")
			}
			return strconv.AppendInt(out, n, 10), nil // "-0" becomes "0"
		}
		v, _ := new(big.Int).SetString(s, 10)
		if v.CmpAbs(maxExact) > 0 {
			return nil, p.fail("integer " + s + " is beyond ±2^53 and cannot be stored exactly")
		}
		return append(out, v.String()...), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, p.fail("number " + s + " is not a finite double")
	}
	if f == math.Trunc(f) {
		if math.Abs(f) > MaxExactInteger {
			return nil, p.fail("integral number " + s + " is beyond ±2^53 and cannot be stored exactly")
		}
		return strconv.AppendInt(out, int64(f), 10), nil
	}
	// encoding/json formats floats the ECMAScript way: stable and shortest.
	b, _ := json.Marshal(f)
	return append(out, b...), nil
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
