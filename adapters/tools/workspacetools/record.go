package workspacetools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
	"github.com/turnlog/turnlog/undo"
)

// UndoCaps bound what the undo log keeps of one call's changes (the engine bounds a
// turn's and a session's: fsm.UndoCaps). A content past a cap, or of a path
// Exclude matches, is named (its hash) but not kept; a change whose before content
// is not kept cannot be reverted, and says why (events.FileChange.NotRevertible).
type UndoCaps struct {
	FileBytes int64 // the largest content kept
	CallBytes int64 // what one call keeps in all
	// Exclude are globs (doublestar, workspace-relative) of paths whose contents are
	// never kept.
	Exclude []string
}

// DefaultUndoCaps: files up to 16 MiB, 256 MiB a call, nothing excluded.
var DefaultUndoCaps = UndoCaps{FileBytes: 16 << 20, CallBytes: 256 << 20}

// recordApply records, with the call ctx carries (fsm.RecordFiles), what the apply
// of res changed in the workspace ws below root: each path before and after, and
// the contents, read while the apply's staging directory still holds what it
// replaced.
func recordApply(ctx context.Context, res *sandbox.Result, root, ws string, caps UndoCaps) error {
	if !fsm.RecordsFiles(ctx) {
		return nil
	}
	changes, contents, err := recordChanges(res, caps)
	if err != nil || len(changes) == 0 {
		return err
	}
	if !fsm.RecordFiles(ctx, &events.FilesChanged{Workspace: workspaceKey(root, ws), Changes: changes}, contents) {
		return errLate
	}
	return nil
}

// errLate: the engine made the call's result without waiting for it (a timeout, a
// cancel), so what it changed cannot be recorded with it.
var errLate = errors.New("the call's result was recorded before its tool returned (it timed out or was canceled)")

// recordChanges reads what res's apply (or restore) changed as the undo log records
// it: each path before and after, and the contents within caps. The contents are
// read ahead by a few workers at once, a window of changes at a time; what is kept
// is decided in the changes' order, so the record is the same however they ran.
func recordChanges(res *sandbox.Result, caps UndoCaps) (changes []events.FileChange, contents []events.Content, err error) {
	err = res.FileChanges(func(cs []sandbox.FileChange) error {
		rec := &recording{caps: caps, seen: map[string]bool{}}
		for start := 0; start < len(cs); {
			end := readWindow(cs, start)
			ahead := rec.readAhead(cs[start:end])
			for i := start; i < end; i++ {
				changes = append(changes, rec.change(&cs[i], ahead[i-start]))
			}
			start = end
		}
		contents = rec.contents
		return nil
	})
	return changes, contents, err
}

// A window of changes read ahead holds at most windowBytes of contents, or
// windowChanges changes.
const (
	windowBytes   = 64 << 20
	windowChanges = 1024
)

// readWindow is where the window of changes from start ends.
func readWindow(cs []sandbox.FileChange, start int) int {
	var bytes int64
	end := start
	for end < len(cs) && end-start < windowChanges && (end == start || bytes < windowBytes) {
		for _, st := range []*sandbox.EntryState{cs[end].Before, cs[end].After} {
			if st != nil {
				bytes += st.Size
			}
		}
		end++
	}
	return end
}

// read is one content read ahead: what it holds (its chunks when it may be kept)
// and its size, or why it could not be read.
type read struct {
	c    events.Content
	size int64
	err  error
}

// readAhead reads the contents of the files before and after each change of cs,
// with as many workers as there are processors (up to 4).
func (r *recording) readAhead(cs []sandbox.FileChange) [][2]read {
	out := make([][2]read, len(cs))
	full := r.kept >= r.caps.CallBytes // nothing more is kept: name them only
	// An after side is kept only for a diff (change): where one may still be shown,
	// it is read with its chunks; elsewhere only hashed.
	diffs := r.diffs < undo.DiffsShown
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 4) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := &cs[i]
				may := !full && r.excluded(c.Path) == ""
				if c.Before != nil && c.Before.Kind == sandbox.EntryFile {
					out[i][0] = r.readOne(c.OpenBefore, c.Before.Size, may, true) // the apply's staging directory holds it: nobody writes there
				}
				if c.After != nil && c.After.Kind == sandbox.EntryFile {
					keep := may && diffs && c.After.Size <= undo.MaxDiffSide
					if c.AfterHash != "" && !keep { // the apply hashed it as it copied it
						out[i][1] = read{c: events.Content{Hash: c.AfterHash, Size: c.After.Size}, size: c.After.Size}
						continue
					}
					out[i][1] = r.readOne(c.OpenAfter, c.After.Size, keep, false)
				}
			}
		}()
	}
	for i := range cs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// readOne reads a content of size bytes (as the apply's reading found it), with its
// chunks when may and it fits the file cap; settled says nothing writes its file.
func (r *recording) readOne(open func() (io.ReadCloser, error), size int64, may, settled bool) read {
	f, err := open()
	if err != nil {
		return read{err: err}
	}
	defer f.Close()
	c, err := undo.ReadSized(f, size, may && size <= r.caps.FileBytes, settled)
	return read{c: c, size: c.Size, err: err}
}

// workspaceKey is ws's folder below root ("" for root itself).
func workspaceKey(root, ws string) string {
	rel, err := filepath.Rel(root, ws)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

// recording is one call's changes as they are read.
type recording struct {
	caps     UndoCaps
	kept     int64
	seen     map[string]bool
	contents []events.Content
	diffs    int // changes that may be shown as a diff so far (undo.DiffsShown)
}

// Why a change cannot be reverted.
const (
	notUTF8      = "its name is not UTF-8, which the log cannot hold exactly"
	movedSince   = "another writer changed it after the apply: what is there is not the call's"
	pastFileCap  = "its content was larger than the undo log keeps of a file (%d bytes)"
	pastCallCap  = "the call's changes were larger than the undo log keeps of a call (%d bytes)"
	unreadableAt = "its content could not be read: %v"
	excludedBy   = "the operator keeps its contents out of the undo log (policy.undo.exclude %q)"
)

func (r *recording) change(c *sandbox.FileChange, ahead [2]read) events.FileChange {
	ch := events.FileChange{Path: c.Path, Before: stateOf(c.Before), After: stateOf(c.After)}
	if !utf8.ValidString(c.Path) {
		ch.NotRevertible = notUTF8
	}
	if c.Moved {
		ch.NotRevertible = movedSince
	}
	excluded := r.excluded(c.Path)
	if excluded != "" && ch.NotRevertible == "" && ch.Before != nil {
		ch.NotRevertible = excluded
	}
	if ch.Before != nil && ch.Before.Kind == events.FileKindFile {
		hash, why := r.keep(ahead[0], excluded == "")
		ch.Before.Hash = hash
		if why != "" && ch.NotRevertible == "" {
			ch.NotRevertible = why
		}
	}
	if ch.After != nil && ch.After.Kind == events.FileKindFile {
		// What a revert checks the file against. Its content is kept only where a diff
		// shows it: a revert of a revert puts it back from the revert's own record.
		ch.After.Hash = ahead[1].c.Hash
		if undo.Diffable(ch) && r.diffs < undo.DiffsShown {
			r.diffs++
			if ahead[1].size <= undo.MaxDiffSide {
				r.keep(ahead[1], excluded == "")
			}
		}
	}
	return ch
}

// excluded says why the contents of path are never kept ("": they may be).
func (r *recording) excluded(path string) string {
	for _, glob := range r.caps.Exclude {
		if ok, _ := doublestar.Match(glob, path); ok {
			return fmt.Sprintf(excludedBy, glob)
		}
	}
	return ""
}

// keep names a content read ahead and keeps it when may says so and it fits the
// caps; why says why it was not kept.
func (r *recording) keep(rd read, may bool) (hash, why string) {
	if rd.err != nil {
		return "", fmt.Sprintf(unreadableAt, rd.err)
	}
	keep := may
	switch {
	case !may:
	case rd.size > r.caps.FileBytes:
		keep, why = false, fmt.Sprintf(pastFileCap, r.caps.FileBytes)
	case r.seen[rd.c.Hash]:
		keep = false // kept already
	case r.kept+rd.size > r.caps.CallBytes || rd.c.Chunks == nil && rd.size > 0:
		keep, why = false, fmt.Sprintf(pastCallCap, r.caps.CallBytes)
	}
	if keep {
		r.seen[rd.c.Hash] = true
		r.kept += rd.size
		r.contents = append(r.contents, rd.c)
	}
	return rd.c.Hash, why
}

// stateOf is an entry's state as the log holds it.
func stateOf(s *sandbox.EntryState) *events.FileState {
	if s == nil {
		return nil
	}
	return &events.FileState{Kind: s.Kind, Mode: s.Mode, UID: s.UID, GID: s.GID, Mtime: time.Unix(0, s.MtimeNs).UTC().Format(time.RFC3339Nano),
		Size: s.Size, Target: s.Target}
}
