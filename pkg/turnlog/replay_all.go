package turnlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// ReplaySelection chooses the sessions ReplayAll replays.
type ReplaySelection struct {
	App     string    // only this app's sessions ("": every app's)
	Since   time.Time // only sessions created at or after it (zero: all)
	Sample  int       // at most this many of them, spread evenly (0: all)
	Workers int       // replays at once (0: one a processor)
}

// ReplayAllReport is what replaying a log's sessions against a config found: how many
// sessions were replayed and how many diverge, grouped by cause, most sessions first.
type ReplayAllReport struct {
	Sessions int           `json:"sessions"`
	Diverged int           `json:"diverged"`
	Causes   []ReplayCause `json:"causes"`
	Took     time.Duration `json:"-"`
}

// ReplayCause is one cause of divergence — which agent's llm, instructions, tool or
// settings changed, or which recorded event the replay does not reproduce — with how
// many sessions it stops and one of them.
type ReplayCause struct {
	Cause    string        `json:"cause"`
	Sessions int           `json:"sessions"`
	Example  ReplayExample `json:"example"`
}

// ReplayExample is one session a cause stops: where, and the replay's error.
type ReplayExample struct {
	Session string `json:"session_id"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// ReplayAll replays the sessions of the log at opts.DB that sel selects against the
// config of opts (Config or ConfigData), each on an engine that acts on nothing — no
// model is called, no tool runs (MCP tools come from opts.Snapshot) — in throwaway
// stores, several at once, and reports the sessions that diverge, grouped by cause.
// It never writes to opts.DB: a SQLite file is opened read-only, PostgreSQL read in
// read-only transactions. A branch is replayed after the sessions it was branched
// from (a selected branch brings them, and they count as replayed); a branch of a
// session that diverges replays beside the sessions it was branched from as they
// were recorded, so that it is reported for what changed in it.
func ReplayAll(ctx context.Context, opts Options, sel ReplaySelection) (*ReplayAllReport, error) {
	began := time.Now()
	src, err := openReplaySource(opts.DB)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	all, err := src.sessions(ctx)
	if err != nil {
		return nil, err
	}
	trees := replayTrees(all, sel)
	workers := sel.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(trees)))
	jobs := make(chan []recordedSession)
	results := make(chan sessionOutcome)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = replayWorker(ctx, opts, src, jobs, results)
		}()
	}
	go func() {
		defer close(jobs)
		for _, t := range trees {
			select {
			case jobs <- t:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	rep := &ReplayAllReport{}
	causes := map[string]*ReplayCause{}
	for o := range results {
		rep.Sessions++
		if o.cause == "" {
			continue
		}
		rep.Diverged++
		c := causes[o.cause]
		if c == nil {
			c = &ReplayCause{Cause: o.cause, Example: o.example}
			causes[o.cause] = c
		}
		c.Sessions++
		if o.example.Session < c.Example.Session { // the same example whatever the order replays end in
			c.Example = o.example
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, c := range causes {
		rep.Causes = append(rep.Causes, *c)
	}
	sort.Slice(rep.Causes, func(i, j int) bool {
		a, b := rep.Causes[i], rep.Causes[j]
		return a.Sessions > b.Sessions || a.Sessions == b.Sessions && a.Cause < b.Cause
	})
	rep.Took = time.Since(began)
	return rep, nil
}

// sessionOutcome is one replayed session: why it diverges ("": it does not).
type sessionOutcome struct {
	cause   string
	example ReplayExample
}

// replayTrees selects sessions and groups them with the sessions they were branched
// from: each tree (a session not branched, and its selected descendants with the
// sessions between) replays on one worker, sources first.
func replayTrees(all []recordedSession, sel ReplaySelection) [][]recordedSession {
	byID := make(map[string]recordedSession, len(all))
	for _, s := range all {
		byID[s.ID] = s
	}
	var chosen []recordedSession
	for _, s := range all {
		if (sel.App == "" || s.App == sel.App) && !s.CreatedAt.Before(sel.Since) {
			chosen = append(chosen, s)
		}
	}
	if sel.Sample > 0 && sel.Sample < len(chosen) {
		step := float64(len(chosen)) / float64(sel.Sample)
		sample := make([]recordedSession, 0, sel.Sample)
		for i := range sel.Sample {
			sample = append(sample, chosen[int(float64(i)*step)])
		}
		chosen = sample
	}
	included := map[string]bool{}
	for _, s := range chosen {
		for id := s.ID; id != "" && !included[id]; id = byID[id].Parent {
			included[id] = true // with the sessions it was branched from
		}
	}
	rootOf := func(id string) string {
		for byID[id].Parent != "" {
			id = byID[id].Parent
		}
		return id
	}
	index := map[string]int{}
	var trees [][]recordedSession
	for _, s := range all { // in creation order: a source before its branches
		if !included[s.ID] {
			continue
		}
		root := rootOf(s.ID)
		i, ok := index[root]
		if !ok {
			i = len(trees)
			index[root] = i
			trees = append(trees, nil)
		}
		trees[i] = append(trees[i], s)
	}
	return trees
}

// replayWorker replays the trees it is given on an engine of its own, over a
// throwaway store of its own.
func replayWorker(ctx context.Context, opts Options, src *replaySource, jobs <-chan []recordedSession, results chan<- sessionOutcome) error {
	w := &replayer{opts: opts, src: src}
	defer w.close()
	main, err := w.open(ctx, "replay.db")
	if err != nil {
		for range jobs { // the others still drain the queue; this one has nothing to replay with
		}
		return err
	}
	for tree := range jobs {
		diverged := map[string]bool{}
		aside := map[string]bool{} // replayed on the aside log: its branches replay there too
		byID := map[string]recordedSession{}
		for _, s := range tree {
			byID[s.ID] = s
			var out sessionOutcome
			if diverged[s.Parent] || aside[s.Parent] {
				out = w.besideItsSource(ctx, s, byID)
				aside[s.ID] = true
			} else {
				out = replayOne(ctx, main.Engine, src, s)
			}
			if out.cause != "" {
				diverged[s.ID] = true
			}
			select {
			case results <- out:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// replayer is one worker's engines: main replays the sessions; the aside logs, one a
// branch depth, hold as they were recorded the sessions a branch was branched from
// when their replay diverged, so that the branch replays on what it was branched from.
type replayer struct {
	opts   Options
	src    *replaySource
	dirs   []string
	logs   []*Turnlog
	asides map[int]*asideLog
}

// open opens a throwaway replay-only log.
func (w *replayer) open(ctx context.Context, name string) (*Turnlog, error) {
	dir, err := os.MkdirTemp("", "turnlog-replay-all-")
	if err != nil {
		return nil, err
	}
	w.dirs = append(w.dirs, dir)
	opts := w.opts
	opts.DB, opts.Synchronous, opts.ReplayOnly, opts.IgnoreWebhooks = filepath.Join(dir, name), "OFF", true, true
	opts.Logger, opts.OTLPEndpoint, opts.Observer = zerolog.Logger{}, "", nil
	tl, err := Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	w.logs = append(w.logs, tl)
	return tl, nil
}

func (w *replayer) close() {
	for _, tl := range w.logs {
		tl.Close()
	}
	for _, d := range w.dirs {
		os.RemoveAll(d)
	}
}

// besideItsSource replays a branch whose source diverged (or was itself replayed
// aside): on the aside log of its depth, after the sessions it was branched from,
// appended there as they were recorded. Each depth has a log of its own, so a session
// is replayed on only one of them and its sources are always whole where it replays.
func (w *replayer) besideItsSource(ctx context.Context, s recordedSession, byID map[string]recordedSession) sessionOutcome {
	var lineage []string
	for id := s.Parent; id != ""; id = byID[id].Parent {
		lineage = append([]string{id}, lineage...)
	}
	fail := func(msg string) sessionOutcome {
		return sessionOutcome{cause: "its source diverges (the session it was branched from)",
			example: ReplayExample{Session: s.ID, Message: "branched from " + s.Parent + ", which diverges: " + msg}}
	}
	depth := len(lineage)
	if w.asides == nil {
		w.asides = map[int]*asideLog{}
	}
	a := w.asides[depth]
	if a == nil {
		tl, err := w.open(ctx, fmt.Sprintf("aside-%d.db", depth))
		if err != nil {
			return fail(err.Error())
		}
		a = &asideLog{tl: tl, held: map[string]bool{}}
		w.asides[depth] = a
	}
	for _, id := range lineage {
		if a.held[id] {
			continue
		}
		evs, err := w.src.events(ctx, id)
		if err == nil {
			_, err = a.tl.Store.Append(ctx, id, 0, evs)
		}
		if err != nil {
			return fail(err.Error())
		}
		a.held[id] = true
	}
	return replayOne(ctx, a.tl.Engine, w.src, s)
}

// asideLog is an aside log: the sessions it holds as they were recorded.
type asideLog struct {
	tl   *Turnlog
	held map[string]bool
}

// replayOne replays one session onto the worker's store: its turns that ended (a
// turn still running, or left by a crash, has no recorded end to replay to).
func replayOne(ctx context.Context, e *fsm.Engine, src *replaySource, s recordedSession) sessionOutcome {
	evs, err := src.events(ctx, s.ID)
	if err == nil {
		_, err = e.ReplayOnto(ctx, endedTurns(evs))
	}
	if err == nil {
		return sessionOutcome{}
	}
	ex := ReplayExample{Session: s.ID, Message: err.Error()}
	var te *events.Error
	if errors.As(err, &te) && te.Code == events.CodeNondeterminism {
		ex.Path, ex.Message = te.Field, te.Message
	}
	return sessionOutcome{cause: causeOf(err), example: ex}
}

// endedTurns is a session's events up to where its last turn last stood still: all
// of them when it ended or waits; else without the run still going (a turn started,
// or resumed, whose end is not recorded yet — running, or left by a crash), back to
// its start or to the suspension it was resumed from.
func endedTurns(evs []events.Event) []events.Event {
	for i := len(evs) - 1; i > 0; i-- {
		switch evs[i].Type {
		case events.TypeTurnCommitted, events.TypeTurnFailed, events.TypeTurnCanceled, events.TypeTurnSuspended:
			return evs
		case events.TypeTurnStarted:
			return evs[:i]
		case events.TypeTurnResumed:
			for j := i - 1; j > 0; j-- {
				if evs[j].Type == events.TypeTurnSuspended {
					return evs[:j+1]
				}
			}
			return evs[:i]
		}
	}
	return evs
}

// causeOf names what a replay's error says changed, the same for every session it
// stops: an agent's llm, instructions, a tool (by name) or settings, and at which
// step; a recorded event the replay does not reproduce (its type, where, its field);
// else the error's code and message. Call ids and numbers are left out.
func causeOf(err error) string {
	var nd *fsm.NondeterminismError
	var d *fsm.Divergence
	switch {
	case errors.As(err, &nd):
		agent, what, at := agentOf(nd.Path), nd.Field, generalPath(nd.Path)
		if g, ok := guardrailOf(nd.Path); ok {
			return fmt.Sprintf("agent %s: guardrail %s's judge differs: %s (at %s)", agent, g, what, at)
		}
		switch {
		case what == "llm", what == "instructions", what == "settings":
			return fmt.Sprintf("agent %s: its %s changed (at %s)", agent, what, at)
		case strings.HasPrefix(what, "tools."):
			return fmt.Sprintf("agent %s: tool %s changed (at %s)", agent, strings.TrimPrefix(what, "tools."), at)
		case what == "tools":
			return fmt.Sprintf("agent %s: its tools changed (at %s)", agent, at)
		}
		return fmt.Sprintf("agent %s: the request differs at %s (at %s)", agent, generalPath(what), at)
	case errors.As(err, &d):
		return fmt.Sprintf("%s at %s: %s differs", d.Type, generalPath(d.Path), generalPath(d.Field))
	}
	return fmt.Sprintf("%s: %s", events.CodeOf(err), generalText(err.Error()))
}

// varying are the parts of an error's text that differ from session to session: ids
// (ULIDs, interrupts, calls), and numbers.
var varying = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b|\bint_[0-9a-f]+\b|\bcall_[0-9A-Za-z_]+\b|\b[0-9]+\b`)

// generalText is an error's text with what varies between sessions as "*".
func generalText(s string) string { return varying.ReplaceAllString(s, "*") }

// agentOf is the agent an activity path is of: the segment before its last
// "guardrail" step (a judge's call is its agent's guardrail's), else before its last
// "model", "compact" or "evidence" step.
func agentOf(path string) string {
	segs := strings.Split(path, "/")
	for _, steps := range [][]string{{"guardrail"}, {"model", "compact", "evidence"}} {
		for i := len(segs) - 2; i >= 0; i-- {
			if slices.Contains(steps, segs[i+1]) {
				return segs[i]
			}
		}
	}
	return path
}

// guardrailOf is the guardrail whose judge a path is a call of
// (<agent>/guardrail/<stage>/<name>/model/<n>).
func guardrailOf(path string) (string, bool) {
	segs := strings.Split(path, "/")
	for i := len(segs) - 3; i >= 0; i-- {
		if segs[i] == "guardrail" {
			return segs[i+2], true
		}
	}
	return "", false
}

// indexes are the [n] of a field path.
var indexes = regexp.MustCompile(`\[[0-9]+\]`)

// generalPath is a path or field with what varies between sessions left out: call
// ids after "tool/", numbers and indexes become "*".
func generalPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if _, err := strconv.Atoi(s); err == nil || i > 0 && segs[i-1] == "tool" {
			segs[i] = "*"
		}
	}
	return indexes.ReplaceAllString(strings.Join(segs, "/"), "[*]")
}

// DiscoverSnapshot asks the config's MCP servers for their tools now (and builds
// every other tool as the config says), for a replay of sessions that used them: the
// only network a replay may use. It opens a throwaway store of its own.
func DiscoverSnapshot(ctx context.Context, opts Options) (map[string]SnapshotTool, error) {
	tmp, err := os.MkdirTemp("", "turnlog-discover-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	opts.DB, opts.Synchronous, opts.IgnoreWebhooks, opts.SecretsOptional = filepath.Join(tmp, "discover.db"), "OFF", true, true
	opts.Logger, opts.OTLPEndpoint = zerolog.Logger{}, ""
	tl, err := Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer tl.Close()
	out := map[string]SnapshotTool{}
	for _, app := range tl.apps.List {
		tools, err := tl.apps.Snapshot(app.Name)
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			out[t.Name] = t
		}
	}
	return out, nil
}
