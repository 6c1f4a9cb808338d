package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
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

// Canonicalize rewrites JSON text in turnlog's canonical form: object keys sorted,
// no insignificant whitespace, integral numbers written as integers, duplicate keys,
// integers beyond ±2^53 and non-finite numbers refused with an error naming the path.
func Canonicalize(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(raw))
	if err := canonValue(dec, &out, "$"); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &CanonicalError{Path: "$", Reason: "trailing data after the JSON value"}
	}
	return out.Bytes(), nil
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

func canonValue(dec *json.Decoder, out *bytes.Buffer, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return &CanonicalError{Path: path, Reason: "malformed JSON: " + err.Error()}
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return canonObject(dec, out, path)
		case '[':
			return canonArray(dec, out, path)
		}
		return &CanonicalError{Path: path, Reason: "unexpected " + t.String()}
	case string:
		writeString(out, t)
	case json.Number:
		return canonNumber(out, t, path)
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	}
	return nil
}

func canonObject(dec *json.Decoder, out *bytes.Buffer, path string) error {
	type member struct {
		key string
		val []byte
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return &CanonicalError{Path: path, Reason: "malformed JSON: " + err.Error()}
		}
		key, ok := tok.(string)
		if !ok {
			return &CanonicalError{Path: path, Reason: "object key is not a string"}
		}
		childPath := memberPath(path, key)
		if seen[key] {
			return &CanonicalError{Path: childPath, Reason: "duplicate key"}
		}
		seen[key] = true
		var val bytes.Buffer
		if err := canonValue(dec, &val, childPath); err != nil {
			return err
		}
		members = append(members, member{key, val.Bytes()})
	}
	if _, err := dec.Token(); err != nil {
		return &CanonicalError{Path: path, Reason: "malformed JSON: " + err.Error()}
	}
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(out, m.key)
		out.WriteByte(':')
		out.Write(m.val)
	}
	out.WriteByte('}')
	return nil
}

func canonArray(dec *json.Decoder, out *bytes.Buffer, path string) error {
	out.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			out.WriteByte(',')
		}
		if err := canonValue(dec, out, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return &CanonicalError{Path: path, Reason: "malformed JSON: " + err.Error()}
	}
	out.WriteByte(']')
	return nil
}

var maxExact = big.NewInt(MaxExactInteger)

func canonNumber(out *bytes.Buffer, n json.Number, path string) error {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		v, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return &CanonicalError{Path: path, Reason: "malformed number " + s}
		}
		if v.CmpAbs(maxExact) > 0 {
			return &CanonicalError{Path: path, Reason: "integer " + s + " is beyond ±2^53 and cannot be stored exactly"}
		}
		out.WriteString(v.String()) // drops "-0" to "0"
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return &CanonicalError{Path: path, Reason: "number " + s + " is not a finite double"}
	}
	return writeFloat(out, f, path)
}

func writeFloat(out *bytes.Buffer, f float64, path string) error {
	if f == math.Trunc(f) {
		if math.Abs(f) > MaxExactInteger {
			return &CanonicalError{Path: path, Reason: "integral number " + strconv.FormatFloat(f, 'g', -1, 64) + " is beyond ±2^53 and cannot be stored exactly"}
		}
		out.WriteString(strconv.FormatInt(int64(f), 10))
		return nil
	}
	// encoding/json formats floats the ECMAScript way, which is stable and shortest.
	b, err := json.Marshal(f)
	if err != nil {
		return &CanonicalError{Path: path, Reason: err.Error()}
	}
	out.Write(b)
	return nil
}

func writeString(out *bytes.Buffer, s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	out.Write(bytes.TrimSuffix(b.Bytes(), []byte{'\n'}))
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
