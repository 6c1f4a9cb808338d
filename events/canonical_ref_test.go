package events_test

// The first, token-based canonicalizer, kept as the oracle the fast one is fuzzed
// against: for every input both must agree byte for byte (or both refuse it).

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/events"
)

var refMaxExact = big.NewInt(events.MaxExactInteger)

func referenceCanonicalize(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	if err := refCanonValue(dec, &out, "$"); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &events.CanonicalError{Path: "$", Reason: "trailing data after the JSON value"}
	}
	return out.Bytes(), nil
}

func refMemberPath(parent, key string) string {
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

func refCanonValue(dec *json.Decoder, out *bytes.Buffer, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return &events.CanonicalError{Path: path, Reason: "malformed JSON: " + err.Error()}
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return refCanonObject(dec, out, path)
		case '[':
			return refCanonArray(dec, out, path)
		}
		return &events.CanonicalError{Path: path, Reason: "unexpected " + t.String()}
	case string:
		refWriteString(out, t)
	case json.Number:
		return refCanonNumber(out, t, path)
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

func refCanonObject(dec *json.Decoder, out *bytes.Buffer, path string) error {
	type member struct {
		key string
		val []byte
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return &events.CanonicalError{Path: path, Reason: "malformed JSON: " + err.Error()}
		}
		key, ok := tok.(string)
		if !ok {
			return &events.CanonicalError{Path: path, Reason: "object key is not a string"}
		}
		childPath := refMemberPath(path, key)
		if seen[key] {
			return &events.CanonicalError{Path: childPath, Reason: "duplicate key"}
		}
		seen[key] = true
		var val bytes.Buffer
		if err := refCanonValue(dec, &val, childPath); err != nil {
			return err
		}
		members = append(members, member{key, val.Bytes()})
	}
	if _, err := dec.Token(); err != nil {
		return &events.CanonicalError{Path: path, Reason: "malformed JSON: " + err.Error()}
	}
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		refWriteString(out, m.key)
		out.WriteByte(':')
		out.Write(m.val)
	}
	out.WriteByte('}')
	return nil
}

func refCanonArray(dec *json.Decoder, out *bytes.Buffer, path string) error {
	out.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			out.WriteByte(',')
		}
		if err := refCanonValue(dec, out, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return &events.CanonicalError{Path: path, Reason: "malformed JSON: " + err.Error()}
	}
	out.WriteByte(']')
	return nil
}

func refCanonNumber(out *bytes.Buffer, n json.Number, path string) error {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		v, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return &events.CanonicalError{Path: path, Reason: "malformed number " + s}
		}
		if v.CmpAbs(refMaxExact) > 0 {
			return &events.CanonicalError{Path: path, Reason: "integer " + s + " is beyond ±2^53 and cannot be stored exactly"}
		}
		out.WriteString(v.String()) // drops "-0" to "0"
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return &events.CanonicalError{Path: path, Reason: "number " + s + " is not a finite double"}
	}
	return refWriteFloat(out, f, path)
}

func refWriteFloat(out *bytes.Buffer, f float64, path string) error {
	if f == math.Trunc(f) {
		if math.Abs(f) > events.MaxExactInteger {
			return &events.CanonicalError{Path: path, Reason: "integral number " + strconv.FormatFloat(f, 'g', -1, 64) + " is beyond ±2^53 and cannot be stored exactly"}
		}
		out.WriteString(strconv.FormatInt(int64(f), 10))
		return nil
	}
	// encoding/json formats floats the ECMAScript way, which is stable and shortest.
	b, err := json.Marshal(f)
	if err != nil {
		return &events.CanonicalError{Path: path, Reason: err.Error()}
	}
	out.Write(b)
	return nil
}

func refWriteString(out *bytes.Buffer, s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	out.Write(bytes.TrimSuffix(b.Bytes(), []byte{'\n'}))
}
