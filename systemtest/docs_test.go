package systemtest

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// TestEventsDocumented checks that docs/events.md has a section for every event type
// the decoder knows, and that each section names every JSON field of the type.
func TestEventsDocumented(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, typ := range events.Types() {
		heading := "## " + typ + " (v1)"
		_, section, ok := strings.Cut(doc, heading)
		if !ok {
			t.Errorf("docs/events.md has no %q section", heading)
			continue
		}
		section, _, _ = strings.Cut(section, "\n## ")
		p, err := events.Decode(events.Event{Type: typ, V: 1, Data: []byte("{}")})
		if err != nil {
			t.Fatal(err)
		}
		st := reflect.TypeOf(p).Elem()
		for i := 0; i < st.NumField(); i++ {
			name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
			if !strings.Contains(section, "`"+name+"`") {
				t.Errorf("docs/events.md %s does not document field %q", typ, name)
			}
		}
	}
}

// TestArchitectureShowsTheMachine keeps the state diagram and transition table in
// docs/architecture.md equal to the machine the code builds.
func TestArchitectureShowsTheMachine(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"Mermaid diagram": fsm.Mermaid(), "transition table": fsm.Table()} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("docs/architecture.md does not contain the current %s:\n%s", name, want)
		}
	}
}
