package fsm

import (
	"context"
	"fmt"
	"sync"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/undo"
)

// UndoCaps bound what the undo log keeps of a turn's and of a session's contents,
// in the bytes of their chunks (a content the log holds already counts again: the
// caps err on the side of keeping less). A content past a cap is named by its hash
// but not kept, and a change whose before content is not kept cannot be reverted
// and says why. Zero: the default; negative: no cap. The tools bound a file and a
// call themselves. A session's count is its own records' (a branch counts from
// zero); a turn's, what its records kept so far, read again when it resumes; with
// calls that run at once, which content meets the cap first is the order their
// results are recorded in.
type UndoCaps struct {
	TurnBytes    int64
	SessionBytes int64
}

// DefaultUndoCaps: 256 MiB a turn, 1 GiB a session.
var DefaultUndoCaps = UndoCaps{TurnBytes: 256 << 20, SessionBytes: 1 << 30}

// resolved is c with its zero caps the defaults and its negative ones none (0).
func (c UndoCaps) resolved() UndoCaps {
	for _, p := range []struct {
		cap *int64
		def int64
	}{{&c.TurnBytes, DefaultUndoCaps.TurnBytes}, {&c.SessionBytes, DefaultUndoCaps.SessionBytes}} {
		switch {
		case *p.cap == 0:
			*p.cap = p.def
		case *p.cap < 0:
			*p.cap = 0
		}
	}
	return c
}

// Why a change past a cap cannot be reverted.
const (
	pastTurnCap    = "the turn's changes were larger than the undo log keeps of a turn (%d bytes)"
	pastSessionCap = "the session's changes were larger than the undo log keeps of a session (%d bytes)"
)

// undoKept is what the undo log kept of a turn's contents so far, and of its
// session's (read from the store at the turn's first record).
type undoKept struct {
	mu      sync.Mutex
	seeded  bool
	turn    int64
	session int64
}

// capContents keeps of a call's contents those that fit the app's caps, in order,
// and marks the changes whose before content it dropped as not revertible.
func (r *run) capContents(ctx context.Context, fc *events.FilesChanged, contents []events.Content) ([]events.Content, error) {
	caps := r.app.UndoCaps.resolved()
	if len(contents) == 0 || (caps.TurnBytes <= 0 && caps.SessionBytes <= 0) {
		return contents, nil
	}
	k := &r.log.undo
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.seeded {
		if caps.SessionBytes > 0 {
			n, err := r.e.store.ContentBytes(ctx, r.session)
			if err != nil {
				return nil, err
			}
			k.session = n
		}
		k.turn, k.seeded = r.keptBefore(), true
	}
	kept := contents[:0:0]
	dropped := map[string]string{}
	for _, c := range contents {
		n := int64(0)
		for _, ch := range c.Chunks {
			n += int64(len(ch.Data))
		}
		switch {
		case caps.TurnBytes > 0 && k.turn+n > caps.TurnBytes:
			dropped[c.Hash] = fmt.Sprintf(pastTurnCap, caps.TurnBytes)
		case caps.SessionBytes > 0 && k.session+n > caps.SessionBytes:
			dropped[c.Hash] = fmt.Sprintf(pastSessionCap, caps.SessionBytes)
		default:
			kept = append(kept, c)
			k.turn += n
			k.session += n
		}
	}
	for i := range fc.Changes {
		ch := &fc.Changes[i]
		if ch.Before == nil || ch.Before.Kind != events.FileKindFile || ch.NotRevertible != "" {
			continue
		}
		if why := dropped[ch.Before.Hash]; why != "" {
			ch.NotRevertible = why
		}
	}
	return kept, nil
}

// keptBefore is what the records of the turn kept before this run of it (a turn
// resumed or recovered): the sizes of the revertible changes' files before, and
// after where a diff shows them (undo.DiffsShown).
func (r *run) keptBefore() int64 {
	if r.rec == nil {
		return 0
	}
	var n int64
	for _, ev := range r.rec.events {
		if ev.Type != events.TypeFilesChanged || ev.Turn != r.turn {
			continue
		}
		fc, err := events.DecodeAs[*events.FilesChanged](ev)
		if err != nil {
			continue
		}
		diffs := 0
		for _, c := range fc.Changes {
			if c.NotRevertible != "" {
				continue
			}
			if c.Before != nil && c.Before.Kind == events.FileKindFile {
				n += c.Before.Size
			}
			if undo.Diffable(c) && diffs < undo.DiffsShown {
				diffs++
				if c.After != nil && c.After.Size <= undo.MaxDiffSide {
					n += c.After.Size
				}
			}
		}
	}
	return n
}
