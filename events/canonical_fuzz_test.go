package events_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/turnlog/turnlog/events"
)

// FuzzCanonicalize checks that whatever Canonicalize accepts is valid JSON, is a
// fixed point (encode→decode→encode is byte-stable), and means the same value.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.0,2.5,"x"]}`, `164.0`, `[]`, `{"a":{"b":{"c":null}}}`,
		`"\u00e9\n"`, `-0.0`, `9007199254740992`, `1e-7`, `{"k":true,"K":false}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := events.Canonicalize(in)
		ref, refErr := referenceCanonicalize(in)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("Canonicalize(%q) error %v, reference error %v", in, err, refErr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(out, ref) {
			t.Fatalf("Canonicalize(%q) = %q, reference %q", in, out, ref)
		}
		if !json.Valid(in) {
			t.Fatalf("accepted invalid JSON %q as %q", in, out)
		}
		if !json.Valid(out) {
			t.Fatalf("Canonicalize(%q) = %q, not valid JSON", in, out)
		}
		again, err := events.Canonicalize(out)
		if err != nil {
			t.Fatalf("Canonicalize(canonical %q): %v", out, err)
		}
		if !bytes.Equal(out, again) {
			t.Fatalf("not byte-stable: %q -> %q", out, again)
		}
		var a, b any
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatalf("accepted input that encoding/json refuses: %q: %v", in, err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q -> %q", in, out)
		}
	})
}
