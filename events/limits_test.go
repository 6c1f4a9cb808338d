package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
)

func TestLimitsRefuseNamingThePath(t *testing.T) {
	l := events.Limits{Depth: 4, Keys: 3, String: 8, Array: 5, NoNUL: true}
	cases := []struct {
		name, doc, field, says string
	}{
		{"deep", `{"a":{"b":[[{"c":1}]]}}`, "a.b[0][0]", "nested deeper than 4"},
		{"deep arrays at the top", `[[[[[1]]]]]`, "[0][0][0][0]", "nested deeper than 4"},
		{"many keys", `{"a":{"k1":1,"k2":2,"k3":3,"k4":4}}`, "a.k4", "more than 3 members"},
		{"long string", `{"a":["ok","123456789"]}`, "a[1]", "longer than 8 bytes"},
		{"long key", `{"123456789":1}`, "123456789", "key longer than 8 bytes"},
		{"long array", `{"a":[1,2,3,4,5,6]}`, "a[5]", "more than 5 elements"},
		{"NUL", `{"a":{"b":"x\u0000"}}`, "a.b", `\u0000`},
		{"NUL in a key", `{"x\u0000":1}`, `"x\x00"`, `\u0000`}, // quoted: no NUL reaches a message
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := l.Check([]byte(c.doc))
			var te *events.Error
			if !asError(err, &te) || te.Code != events.CodeInvalid {
				t.Fatalf("Check(%s) = %v, want an invalid error", c.doc, err)
			}
			if te.Field != c.field || !strings.Contains(te.Message, c.says) {
				t.Fatalf("Check(%s) = field %q %q, want field %q saying %q", c.doc, te.Field, te.Message, c.field, c.says)
			}
		})
	}
}

func TestLimitsPassWhatKeepsWithin(t *testing.T) {
	l := events.Limits{Depth: 4, Keys: 3, String: 8, Array: 5, NoNUL: true}
	for _, doc := range []string{
		`{"a":{"b":[{"c":1}]}}`,
		`[1,2,3,4,5]`,
		`{"k1":"12345678","k2":[],"k3":{}}`,
		`{"a":"\\u0000", "b":"\"}{[["}`,
		`"a string"`,
		`{"a":[1,2,3,4,5],"b":[1,2,3,4,5]}`,
	} {
		if err := l.Check([]byte(doc)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", doc, err)
		}
	}
	if err := (events.Limits{}).Check([]byte(strings.Repeat("[", 5000) + strings.Repeat("]", 5000))); err != nil {
		t.Errorf("zero Limits refused: %v", err)
	}
}

// A document nested as deep as the body allows is refused after reading no more
// than the limit's depth: the work does not grow with the nesting.
func TestLimitsCostNoMoreThanTheDepthLimit(t *testing.T) {
	for _, open := range []string{"[", `{"a":`} {
		doc := []byte(strings.Repeat(open, (1<<20)/len(open)))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := events.DefaultLimits.Check(doc)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("a 1 MiB document of %q passed", open)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
			t.Errorf("checking 1 MiB of %q allocated %d bytes, want under 64 KiB", open, grew)
		}
		if len(err.Error()) > 64*80 {
			t.Errorf("the error is %d bytes long", len(err.Error()))
		}
	}
}

// CheckStrict renders a path only for an error: a document with a long key above a
// wide array allocates about its own size, not its size times its tokens.
func TestCheckStrictAllocatesLinearly(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"` + strings.Repeat("k", 200<<10) + `":[`)
	for i := 0; i < 50000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"x"`)
	}
	b.WriteString("]}")
	var into map[string]json.RawMessage
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := events.CheckStrict(b.Bytes(), &into); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 40*uint64(b.Len()) {
		t.Errorf("CheckStrict of %d bytes allocated %d bytes", b.Len(), grew)
	}
}

func asError(err error, te **events.Error) bool { return errors.As(err, te) }

// TestRecordedEventsAreNotHeldToRequestLimits: a recording (a fixture, an export)
// whose events hold what a request may not — data nested deeper than the request
// limit, wider than it — reads back whole: the log was checked when it was written.
func TestRecordedEventsAreNotHeldToRequestLimits(t *testing.T) {
	deep := json.RawMessage(`{"x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`)
	ev := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "main", Metadata: deep})
	ev.Session, ev.Seq = "s1", 1
	var buf bytes.Buffer
	if err := events.WriteJSONL(&buf, []events.Event{ev}); err != nil {
		t.Fatal(err)
	}
	if err := events.DefaultLimits.Check(buf.Bytes()); err == nil {
		t.Fatal("the recording keeps within the request limits: the test shows nothing")
	}
	got, err := events.ReadJSONL(&buf, "fixture")
	if err != nil || len(got) != 1 || !bytes.Contains(got[0].Data, []byte(strings.Repeat("[", 200))) {
		t.Fatalf("read back: %v %v", got, err)
	}
}
