package turnlog

import (
	"context"
	"errors"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// cannedLog is a log of one session's events.
type cannedLog struct {
	session string
	evs     []events.Event
	err     error
}

func (l cannedLog) Session(context.Context, string) (projection.Session, error) {
	return projection.Session{}, nil
}

func (l cannedLog) Events(_ context.Context, session string, _ int64) ([]events.Event, error) {
	if l.err != nil {
		return nil, l.err
	}
	if session != l.session {
		return nil, events.Errorf(events.CodeNotFound, "no session %s", session)
	}
	return l.evs, nil
}

// TestAStartAsksTheLogWhetherAFinishedApplyCounts: a finished apply a crash left
// unsettled is kept when the record of what its call changed (the FilesChanged
// appended with its result) is in the log, taken back when it is not (another call,
// another turn, a result without the record — a timeout's —, no such session), and
// left when the log cannot say; a restore, kept with its revert's record.
func TestAStartAsksTheLogWhetherAFinishedApplyCounts(t *testing.T) {
	t.Parallel()
	log := cannedLog{session: "s1", evs: []events.Event{
		{Session: "s1", Seq: 1, Turn: "t1", Type: events.TypeToolScheduled, Path: "a/tool/c1"},
		{Session: "s1", Seq: 2, Turn: "t1", Type: events.TypeToolResulted, Path: "a/tool/c1"},
		{Session: "s1", Seq: 3, Turn: "t1", Type: events.TypeFilesChanged, Path: "a/tool/c1/files"},
		{Session: "s1", Seq: 4, Turn: "t2", Type: events.TypeToolScheduled, Path: "a/tool/c2"},
		{Session: "s1", Seq: 5, Turn: "t2", Type: events.TypeToolResulted, Path: "a/tool/c3"},
		{Session: "s1", Seq: 6, Type: events.TypeWorkspaceReverted, Path: "revert/r1"},
	}}
	recorded := builder{ctx: context.Background(), opts: Options{log: log}}.recorded()
	for _, c := range []struct {
		call fsm.CallInfo
		want bool
	}{
		{fsm.CallInfo{Session: "s1", Turn: "t1", Path: "a/tool/c1"}, true},
		{fsm.CallInfo{Session: "s1", Turn: "t2", Path: "a/tool/c2"}, false},
		{fsm.CallInfo{Session: "s1", Turn: "t2", Path: "a/tool/c1"}, false},
		{fsm.CallInfo{Session: "gone", Turn: "t1", Path: "a/tool/c1"}, false},
		{fsm.CallInfo{Session: "s1", Turn: "t2", Path: "a/tool/c3"}, false},
		{fsm.CallInfo{Session: "s1", Path: "revert/r1"}, true},
		{fsm.CallInfo{Session: "s1", Path: "revert/r2"}, false},
	} {
		got, err := recorded(workspacetools.ApplyTag(c.call))
		if err != nil || got != c.want {
			t.Errorf("%+v: %v %v, want %v", c.call, got, err, c.want)
		}
	}
	broken := builder{ctx: context.Background(), opts: Options{log: cannedLog{err: errors.New("disk gone")}}}.recorded()
	if _, err := broken(workspacetools.ApplyTag(fsm.CallInfo{Session: "s1", Turn: "t1", Path: "p"})); err == nil {
		t.Fatal("a log that cannot be read said something")
	}
	if (builder{}).recorded() != nil {
		t.Fatal("without a log there is nothing to ask")
	}
}
