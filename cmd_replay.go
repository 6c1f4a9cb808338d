package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/turnlog/turnlog/adapters/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

func cmdReplay(ctx context.Context, c *cliContext, args []string) error {
	fs := newFlagSet(c, "replay", nil, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := requireArgs(fs, 1, "one FIXTURE_DIR"); err != nil {
		return err
	}
	rep, err := c.replayFixture(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "replay ok: session %s, %d turns, %d events match the recording\n", rep.Session, rep.Turns, rep.Events)
	return err
}

// replayFixture replays fixtures/<name>/events.jsonl under its agent.yaml into a
// fresh temporary store.
func (c *cliContext) replayFixture(ctx context.Context, dir string) (*fsm.ReplayReport, error) {
	apps, err := c.loadApps(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		return nil, err
	}
	recorded, err := readFixture(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "turnlog-replay-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	store, err := sqlite.Open(ctx, filepath.Join(tmp, "replay.db"), sqlite.Options{Synchronous: "OFF"})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	e, err := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: newIDs()})
	if err != nil {
		return nil, err
	}
	return e.Replay(ctx, recorded)
}

// readFixture reads one event a line; data is canonicalized. A line that is not an
// event is a corrupt_log error naming the line.
func readFixture(path string) ([]events.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read fixture: %w", err)
	}
	defer f.Close()
	var evs []events.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var ev events.Event
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			return nil, &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("%s:%d", path, line), Message: "not an event", Err: err}
		}
		data, err := events.Canonicalize(ev.Data)
		if err != nil {
			return nil, &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("%s:%d", path, line), Message: "bad data", Err: err}
		}
		ev.Data = data
		evs = append(evs, ev)
	}
	return evs, sc.Err()
}
