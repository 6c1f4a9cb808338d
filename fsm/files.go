package fsm

import (
	"context"
	"sync"

	"github.com/turnlog/turnlog/events"
)

// A tool that changes its workspace — the apply of a command's writes, a file
// tool's write — hands the engine, through the call's context, what it changed
// (RecordFiles): the engine appends it as a FilesChanged at `<call's path>/files`,
// with its contents, in the very append of the call's result, so the result and the
// record of what it did to the files are durable together or not at all. A replay
// takes both from the recording.

// FilesPath is the path of the FilesChanged of the call at path.
func FilesPath(callPath string) string { return callPath + "/files" }

type filesKey struct{}

// callFiles is what a call's tool recorded of its changes.
type callFiles struct {
	mu       sync.Mutex
	changed  *events.FilesChanged
	contents []events.Content
	sealed   bool // the result was made (a tool that returns later records nothing)
}

// RecordFiles records what the tool call ctx carries changed in its workspace and
// the contents its changes name; the engine fills in the call and the tool. A call
// records once (a second record replaces the first). It says whether the engine
// will record it: a tool called with no engine behind ctx records nothing, and one
// that returns after the engine made its result without it (a timeout, a cancel)
// neither — its changes must then be taken back.
func RecordFiles(ctx context.Context, changed *events.FilesChanged, contents []events.Content) bool {
	f, ok := ctx.Value(filesKey{}).(*callFiles)
	if !ok || changed == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sealed {
		return false
	}
	f.changed, f.contents = changed, contents
	return true
}

// RecordsFiles says whether a change recorded with ctx reaches the log (a tool
// need not read what it changed otherwise).
func RecordsFiles(ctx context.Context) bool {
	_, ok := ctx.Value(filesKey{}).(*callFiles)
	return ok
}

func withCallFiles(ctx context.Context, f *callFiles) context.Context {
	return context.WithValue(ctx, filesKey{}, f)
}

// seal ends what the call's tool may record: its result is being made.
func (f *callFiles) seal() {
	if f != nil {
		f.mu.Lock()
		f.sealed = true
		f.mu.Unlock()
	}
}

// event is the FilesChanged of the call at path, or none when nothing was recorded;
// keep says which of its contents the log keeps.
func (f *callFiles) event(turn, path string, call events.ToolCall,
	keep func(*events.FilesChanged, []events.Content) ([]events.Content, error)) (events.Event, bool, error) {
	if f == nil {
		return events.Event{}, false, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sealed = true
	if f.changed == nil {
		return events.Event{}, false, nil
	}
	fc := *f.changed
	fc.CallID, fc.Tool = call.ID, call.Name
	fc.Changes = append([]events.FileChange(nil), fc.Changes...)
	contents, err := keep(&fc, f.contents)
	if err != nil {
		return events.Event{}, false, err
	}
	ev, err := events.New(turn, FilesPath(path), &fc)
	if err != nil {
		return events.Event{}, false, err
	}
	ev.Contents = contents
	return ev, true, nil
}
