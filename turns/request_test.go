package turns

import (
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// TestARequestThatAsksNothingOrTwoThingsIsRefused: each shape a transport may decode
// that is no turn request is refused naming its field.
func TestARequestThatAsksNothingOrTwoThingsIsRefused(t *testing.T) {
	in, neg := "hi", int64(-1)
	for field, r := range map[string]Request{
		"body":          {Input: &in, Answers: map[string]fsm.Answer{}},
		"input":         {},
		"on_busy":       {Input: &in, OnBusy: "later"},
		"background":    {Input: &in, Background: true, Stream: true},
		"Last-Event-ID": {Input: &in, After: &neg},
	} {
		var te *events.Error
		err := r.check()
		if !events.IsCode(err, events.CodeInvalid) || !asError(err, &te) || te.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
	if err := (Request{Answers: map[string]fsm.Answer{}, OnBusy: fsm.OnBusyEnqueue}).check(); err == nil {
		t.Error("on_busy with answers was taken")
	}
	if err := (Request{Input: &in, OnBusy: fsm.OnBusyInterrupt, Background: true}).check(); err != nil {
		t.Errorf("a whole request: %v", err)
	}
}

func asError(err error, target **events.Error) bool {
	e, ok := err.(*events.Error)
	*target = e
	return ok
}
