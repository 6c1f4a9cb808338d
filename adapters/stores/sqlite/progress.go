package sqlite

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// A running turn's counters (model and tool calls, tokens) are not written to
// proj_turns at every step: that would put one more page in every commit. The
// writer keeps what its commits added in memory and writes it when the turn waits
// for people or ends, or in the first commit after it is progressFlushAge old. The
// store's own reads of a running turn add what is in memory, so they are exact; a
// reader outside the process (sqlite3) sees a running turn's counters at most that
// old while the process commits. A crash loses only the memory: the log has every
// event, and HealTurnProgress (run before a crashed turn is recovered) or a rebuild
// counts them again.

// progressFlushAge is how long a running turn's counters may wait in memory.
const progressFlushAge = time.Second

type turnKey struct{ session, turn string }

// pendingProgress is what committed appends added to a turn's counters and
// proj_turns does not have yet, and since when.
type pendingProgress struct {
	delta projection.TurnProgressed
	since time.Time
}

// progressState is the writer's counters in memory: committed (read by the store's
// reads under mu) and the transaction's own, which only the writer touches.
type progressState struct {
	mu        sync.RWMutex // commits that write pending counts hold it across COMMIT
	committed map[turnKey]pendingProgress

	tx      map[turnKey]projection.TurnProgressed // added by the open transaction
	flushed map[turnKey]bool                      // written by the open transaction
	reset   bool                                  // the open transaction rebuilt proj_turns
}

// begin starts a transaction's view (again, when a batch is written again).
func (p *progressState) begin() {
	p.tx, p.flushed, p.reset = map[turnKey]projection.TurnProgressed{}, map[turnKey]bool{}, false
}

// add keeps c for the turn's next write.
func (p *progressState) add(c projection.TurnProgressed) {
	k := turnKey{c.Session, c.Turn}
	p.tx[k] = p.tx[k].Add(c)
}

// rebuilt says the open transaction refolded proj_turns from the log: nothing
// pending before it still counts.
func (p *progressState) rebuilt() {
	p.reset = true
	clear(p.tx)
	clear(p.flushed)
}

// owed is what the turn's row lacks now, in the open transaction.
func (p *progressState) owed(k turnKey) projection.TurnProgressed {
	d := p.tx[k]
	if !p.flushed[k] && !p.reset {
		d = d.Add(p.committed[k].delta)
	}
	return d
}

// mustHold says the commit writes pending counts (or drops them): it must hold mu
// across COMMIT, so that no read sees the counts both in the row and in memory.
func (p *progressState) mustHold(erased []string) bool {
	return len(p.flushed) > 0 || p.reset || len(erased) > 0
}

// committedTx folds the committed transaction in (mu held).
func (p *progressState) committedTx(at time.Time, erased []string) {
	if p.reset {
		clear(p.committed)
	}
	for k := range p.flushed {
		delete(p.committed, k)
	}
	for k, d := range p.tx {
		e, ok := p.committed[k]
		if !ok {
			e.since = at
		}
		e.delta = e.delta.Add(d)
		p.committed[k] = e
	}
	for _, s := range erased {
		for k := range p.committed {
			if k.session == s {
				delete(p.committed, k)
			}
		}
	}
}

// of is what memory adds to a turn's row (mu held for reading).
func (p *progressState) of(session, turn string) projection.TurnProgressed {
	return p.committed[turnKey{session, turn}].delta
}

// writeProgress writes what the turn's row lacks, in the open transaction.
func (w *writer) writeProgress(ctx context.Context, k turnKey) error {
	d := w.progress.owed(k)
	w.progress.flushed[k] = true
	delete(w.progress.tx, k)
	if d == (projection.TurnProgressed{}) {
		return nil
	}
	_, err := w.turnProgress.ExecContext(ctx, d.ModelCalls, d.ToolCalls, d.Usage.InputTokens, d.Usage.OutputTokens,
		d.Usage.CachedTokens, d.Usage.ReasoningTokens, d.ModelMS, k.session, k.turn)
	if err != nil {
		return fmt.Errorf("write the progress of turn %s/%s: %w", k.session, k.turn, err)
	}
	return nil
}

// writeAllProgress writes every running turn's counters held in memory.
func (w *writer) writeAllProgress(ctx context.Context) error {
	keys := make([]turnKey, 0, len(w.progress.committed)+len(w.progress.tx))
	for k := range w.progress.committed {
		keys = append(keys, k)
	}
	for k := range w.progress.tx {
		keys = append(keys, k)
	}
	for _, k := range keys {
		if w.progress.flushed[k] {
			continue
		}
		if err := w.writeProgress(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// writeAgedProgress writes, before a commit, the counters that have waited long
// enough in memory.
func (w *writer) writeAgedProgress(ctx context.Context, now time.Time) error {
	if w.progress.reset {
		return nil
	}
	for k, e := range w.progress.committed {
		if !w.progress.flushed[k] && now.Sub(e.since) >= progressFlushAge {
			if err := w.writeProgress(ctx, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// projectLive applies an appended event's projection changes, keeping a running
// turn's counters in memory and writing them when the turn waits or ends.
func (w *writer) projectLive(ctx context.Context, ev events.Event) error {
	changes, err := projection.Changes(ev)
	if err != nil {
		return err
	}
	kept := changes[:0:0]
	for _, c := range changes {
		switch c := c.(type) {
		case projection.TurnProgressed:
			w.progress.add(c)
			continue
		case projection.TurnClosed:
			err = w.writeProgress(ctx, turnKey{c.Session, c.Turn})
		case projection.TurnPaused:
			err = w.writeProgress(ctx, turnKey{c.Session, c.Turn})
		}
		if err != nil {
			return err
		}
		kept = append(kept, c)
	}
	return w.applyChanges(ctx, kept)
}

// withProgress adds to turns what memory holds of their counters. read runs the
// query under the lock that keeps a commit from writing those counts meanwhile.
func (s *Store) withProgress(read func() ([]projection.Turn, error)) ([]projection.Turn, error) {
	p := &s.w.progress
	p.mu.RLock()
	defer p.mu.RUnlock()
	turns, err := read()
	if err != nil {
		return nil, err
	}
	for i, t := range turns {
		if t.Status != projection.TurnRunning {
			continue
		}
		if d := p.of(t.Session, t.ID); d != (projection.TurnProgressed{}) {
			turns[i].ModelCalls += d.ModelCalls
			turns[i].ToolCalls += d.ToolCalls
			turns[i].Usage = turns[i].Usage.Add(d.Usage)
			turns[i].ModelMS += d.ModelMS
		}
	}
	return turns, nil
}

// withProgressOne is withProgress for one turn.
func (s *Store) withProgressOne(read func() (projection.Turn, error)) (projection.Turn, error) {
	turns, err := s.withProgress(func() ([]projection.Turn, error) {
		t, err := read()
		return []projection.Turn{t}, err
	})
	if err != nil {
		return projection.Turn{}, err
	}
	return turns[0], nil
}

// HealTurnProgress counts a turn's model and tool calls and tokens again from its
// events and writes them to its row: after a crash, what the row lacked was in the
// memory of the process that died. The engine runs it before it recovers a turn
// (nothing else appends to the turn meanwhile).
func (s *Store) HealTurnProgress(ctx context.Context, session, turn string) error {
	t, err := s.Turn(ctx, session, turn)
	if err != nil {
		return err
	}
	evs, err := s.Events(ctx, session, t.StartSeq-1)
	if err != nil {
		return err
	}
	var sum projection.TurnProgressed
	for _, ev := range evs {
		if ev.Turn != turn {
			continue
		}
		changes, err := projection.Changes(ev)
		if err != nil {
			return fmt.Errorf("count %s/%d: %w", ev.Session, ev.Seq, err)
		}
		for _, c := range changes {
			if p, ok := c.(projection.TurnProgressed); ok {
				sum = sum.Add(p)
			}
		}
	}
	return s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		k := turnKey{session, turn}
		w.progress.flushed[k] = true // what memory held is in sum
		delete(w.progress.tx, k)
		_, err := w.conn.ExecContext(ctx, qTurnProgressSet, sum.ModelCalls, sum.ToolCalls, sum.Usage.InputTokens, sum.Usage.OutputTokens,
			sum.Usage.CachedTokens, sum.Usage.ReasoningTokens, sum.ModelMS, session, turn)
		return err
	})
}
