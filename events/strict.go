package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CheckStrict refuses what encoding/json would silently take differently from what
// the client wrote: an object key that names a field of into only when case is
// ignored ({"Confirmed": true} beside {"confirmed": false}), a string holding invalid
// UTF-8 or a lone UTF-16 surrogate (which the decoder turns into U+FFFD). The error
// is an invalid error naming the field. Unknown fields and types are left to the
// decoder (DisallowUnknownFields), which runs after.
func CheckStrict(raw []byte, into any) error {
	t := reflect.TypeOf(into)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	// The path of the value being read is rendered only for an error, so a deep or
	// wide document costs no more than its tokens.
	var stack []strictFrame
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // malformed JSON is the decoder's to report
		}
		segment := raw[start:dec.InputOffset()]
		top := len(stack) - 1
		if s, ok := tok.(string); ok {
			isKey := top >= 0 && stack[top].object && stack[top].expectKey
			if why := badString(segment); why != "" {
				if isKey {
					return FieldError(CodeInvalid, orBody(joinPath(strictPath(stack[:top]), ShownName(s))), "%s", why)
				}
				return FieldError(CodeInvalid, orBody(strictPath(stack)), "%s", why)
			}
			if isKey {
				f := &stack[top]
				if exact, folded := fieldNamed(f.t, s); !exact && folded != "" {
					return FieldError(CodeInvalid, orBody(joinPath(strictPath(stack[:top]), ShownName(s))),
						"unknown field %q: field names are case-sensitive (%q is one)", ShortenForMessage(s, 64), folded)
				}
				f.key, f.expectKey, f.keyed = s, false, true
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			ct := t
			if top >= 0 {
				ct = stack[top].childType()
			}
			stack = append(stack, strictFrame{object: tok == json.Delim('{'), t: ct, expectKey: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
		}
		// A value ended: the container moves on.
		if n := len(stack) - 1; n >= 0 {
			if stack[n].object {
				stack[n].expectKey = true
			} else {
				stack[n].index++
			}
		}
	}
}

// strictFrame is one open object or array while CheckStrict reads.
type strictFrame struct {
	object    bool
	t         reflect.Type // the container's type (nil: anything)
	expectKey bool
	keyed     bool // key holds the member being read
	key       string
	index     int
}

// childType is the type of the value about to be read in f.
func (f *strictFrame) childType() reflect.Type {
	if f.object {
		return fieldType(f.t, f.key)
	}
	return elemType(f.t)
}

// strictPath renders the path of the value being read in the innermost frame.
func strictPath(stack []strictFrame) string {
	var b strings.Builder
	for _, f := range stack {
		if !f.object {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
			continue
		}
		if !f.keyed {
			break
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(ShownName(f.key))
	}
	return b.String()
}

func orBody(where string) string {
	if where == "" {
		return "body"
	}
	return where
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// badString says what is wrong with a JSON string token as written (its raw bytes),
// or "".
func badString(segment []byte) string {
	q := bytes.IndexByte(segment, '"')
	if q < 0 {
		return ""
	}
	s := segment[q:]
	if !utf8.Valid(s) {
		return "holds invalid UTF-8"
	}
	for i := 0; i+5 < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' {
			i++ // another escape: skip its character
			continue
		}
		r, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 32)
		if err != nil {
			return ""
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF: // a high surrogate must be followed by a low one
			if i+11 >= len(s) || s[i+6] != '\\' || s[i+7] != 'u' {
				return "holds a lone UTF-16 surrogate"
			}
			lo, err := strconv.ParseUint(string(s[i+8:i+12]), 16, 32)
			if err != nil || lo < 0xDC00 || lo > 0xDFFF {
				return "holds a lone UTF-16 surrogate"
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return "holds a lone UTF-16 surrogate"
		default:
			i += 5
		}
	}
	return ""
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// opaque says whether t decodes itself (json.RawMessage, a custom decoder) or takes
// anything: its keys are not checked.
func opaque(t reflect.Type) bool {
	if t == nil || t.Kind() == reflect.Interface {
		return true
	}
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// fieldNamed says whether a struct type has a field of exactly that JSON name, and
// else the name of one that matches it when case is ignored (or "").
func fieldNamed(t reflect.Type, name string) (exact bool, folded string) {
	t = deref(t)
	if opaque(t) || t.Kind() != reflect.Struct {
		return true, ""
	}
	for _, f := range jsonFields(t) {
		if f.name == name {
			return true, ""
		}
		if folded == "" && strings.EqualFold(f.name, name) {
			folded = f.name
		}
	}
	return false, folded
}

// fieldType is the type of the member key of a container of type t (nil: anything).
func fieldType(t reflect.Type, key string) reflect.Type {
	t = deref(t)
	if opaque(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		for _, f := range jsonFields(t) {
			if f.name == key {
				return f.t
			}
		}
	}
	return nil
}

func elemType(t reflect.Type) reflect.Type {
	t = deref(t)
	if opaque(t) {
		return nil
	}
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		return t.Elem()
	}
	return nil
}

type jsonField struct {
	name string
	t    reflect.Type
}

// jsonFields are the JSON members of a struct type, embedded structs' included.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && deref(f.Type).Kind() == reflect.Struct {
			out = append(out, jsonFields(deref(f.Type))...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type})
	}
	return out
}
