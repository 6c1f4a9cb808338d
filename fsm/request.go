package fsm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/events"
)

// conversation is a session's items with a running hash chain, so a request hash
// costs O(new items), not O(history).
type conversation struct {
	items []events.Item
	// commitSeq is the session's commit the items end with (set as the engine keeps
	// the conversation).
	commitSeq int64
	chain     [][32]byte // chain[i] is the hash after items[:i+1]
	// views are the conversation prepared for each context-managed agent that has
	// built a request from it, kept in step with items.
	views map[*contextmgr.Manager]*contextmgr.Prepared
	// summaries counts the context_summary items; covered is what the newest stands for.
	summaries, covered int
	// skills: the calls of load_skill waiting for their output (call id → skill), the
	// skills whose body the conversation holds (→ its index), and the newest loaded
	// (the skill later calls act under, for the policy).
	skillCalls map[string]string
	skillAt    map[string]int
	lastSkill  string
	// undo journals noteSkill's changes, newest last, to take back those of the
	// items truncate drops.
	undo []undoChange
	// tallies are the items counted for budget checks, by counter; spend is what
	// the session's last run on this engine counted for them.
	tallies map[*contextmgr.Counter]*tokenTally
	spend   *spendSnapshot
}

// skillInContext says whether a skill's body is in the conversation after what the
// newest summary stands for (a compacted body must be loaded again).
func (c *conversation) skillInContext(name string) bool {
	i, ok := c.skillAt[name]
	return ok && i >= c.covered
}

// noteSkill follows load_skill calls and their outputs as items join (the newest,
// at index len(c.items)-1, is it). Each change it makes is journalled with that
// index, so truncate can take back the changes of the dropped items alone.
func (c *conversation) noteSkill(it events.Item) {
	at := len(c.items) - 1
	switch {
	case it.Type == events.ItemFunctionCall && it.Name == LoadSkillTool:
		if c.skillCalls == nil {
			c.skillCalls, c.skillAt = map[string]string{}, map[string]int{}
		}
		c.journal(at, undoMapEntry(c.skillCalls, it.CallID))
		c.skillCalls[it.CallID] = gjson.GetBytes(it.Arguments, "name").String()
	case it.Type == events.ItemFunctionCallOutput && c.skillCalls[it.CallID] != "":
		if name := c.skillCalls[it.CallID]; !strings.HasPrefix(it.Output, `{"error"`) {
			prev := c.lastSkill
			c.journal(at, func() { c.lastSkill = prev })
			c.lastSkill = name
			if strings.HasPrefix(it.Output, "# Skill ") {
				c.journal(at, undoMapEntry(c.skillAt, name))
				c.skillAt[name] = at
			}
		}
	case it.Type == events.ItemContextSummary:
		prev := c.covered
		c.journal(at, func() { c.covered = prev })
		c.covered = max(c.covered, it.Covers)
	}
}

// undoChange takes back one change noteSkill made for the item at index at.
type undoChange struct {
	at   int
	undo func()
}

func (c *conversation) journal(at int, undo func()) {
	c.undo = append(c.undo, undoChange{at: at, undo: undo})
}

// undoMapEntry restores key of m to what it is now (absent if it is absent).
func undoMapEntry[V any](m map[string]V, key string) func() {
	prev, had := m[key]
	return func() {
		if had {
			m[key] = prev
		} else {
			delete(m, key)
		}
	}
}

func (c *conversation) append(its ...events.Item) {
	for _, it := range its {
		var prev [32]byte
		if n := len(c.chain); n > 0 {
			prev = c.chain[n-1]
		}
		ih := sha256.Sum256(events.MustMarshal(it))
		c.chain = append(c.chain, sha256.Sum256(append(prev[:], ih[:]...)))
		c.items = append(c.items, it)
		if it.Type == events.ItemContextSummary {
			c.summaries++
		}
		c.noteSkill(it)
	}
	for _, v := range c.views {
		v.Append(its...)
	}
}

// truncate drops items past n (used when a turn fails or waits for people: its items
// were never committed). It costs what it drops, not the conversation's length.
func (c *conversation) truncate(n int) {
	for _, it := range c.items[n:] {
		if it.Type == events.ItemContextSummary {
			c.summaries--
		}
	}
	for len(c.undo) > 0 && c.undo[len(c.undo)-1].at >= n {
		c.undo[len(c.undo)-1].undo()
		c.undo = c.undo[:len(c.undo)-1]
	}
	c.items, c.chain = c.items[:n], c.chain[:n]
	c.truncateTallies(n)
	for _, v := range c.views {
		v.Truncate(n)
	}
}

// summariesSince counts the summary items at or after index i.
func (c *conversation) summariesSince(i int) int {
	n := 0
	for _, it := range c.items[min(i, len(c.items)):] {
		if it.Type == events.ItemContextSummary {
			n++
		}
	}
	return n
}

func (c *conversation) hash() string {
	if len(c.chain) == 0 {
		return ""
	}
	return hex.EncodeToString(c.chain[len(c.chain)-1][:])
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// partHashLen is how many hex digits of each part's SHA-256 a ModelCalled keeps:
// enough to say which part differs. The request hash itself is kept whole.
const partHashLen = 16

// requestParts is what a ModelCalled records about a request's parts.
func requestParts(ag *Agent, f *agentFace, c *conversation) events.RequestParts {
	return events.RequestParts{
		Instructions: f.instructionsHash[:partHashLen],
		Tools:        ag.toolsHash[:partHashLen],
		Settings:     ag.settingsHash[:partHashLen],
		Items:        len(c.items),
		ToolHashes:   ag.toolHashes,
	}
}

// toolHashesOf is each tool spec's short hash, by name.
func toolHashesOf(specs []ToolSpec) map[string]string {
	if len(specs) == 0 {
		return nil
	}
	out := make(map[string]string, len(specs))
	for _, s := range specs {
		out[s.Name] = hashOf(events.MustMarshal(s))[:partHashLen]
	}
	return out
}

// changedTools names the tools whose part differs between a recording and now:
// "NAME" (changed), "+NAME" (offered now only), "-NAME" (recorded only), in order.
func changedTools(recorded, now map[string]string) []string {
	var out []string
	for name, h := range now {
		switch r, ok := recorded[name]; {
		case !ok:
			out = append(out, "+"+name)
		case r != h:
			out = append(out, name)
		}
	}
	for name := range recorded {
		if _, ok := now[name]; !ok {
			out = append(out, "-"+name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.TrimLeft(out[i], "+-") < strings.TrimLeft(out[j], "+-") })
	return out
}

// requestHash is the SHA-256 of the whole request, built from the full hashes of its
// parts and the conversation's running hash chain.
func requestHash(ag *Agent, f *agentFace, c *conversation) string {
	h := sha256.New()
	for _, part := range []string{ag.LLM, f.instructionsHash, ag.toolsHash, ag.settingsHash, c.hash(), strconv.Itoa(len(c.items))} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// NondeterminismError says a replayed activity would send a different request than
// the one recorded at its path.
type NondeterminismError struct {
	Path  string
	Field string
	Want  string // recorded
	Got   string // now
}

func (e *NondeterminismError) Error() string {
	return fmt.Sprintf("nondeterminism at %s: %s differs (recorded %s, now %s)", e.Path, e.Field, e.Want, e.Got)
}

// explainMismatch names the first field in which the request now differs from the
// recorded one. recordedItems is the conversation rebuilt from the log.
func explainMismatch(path, llm string, rec *events.ModelCalled, now events.RequestParts, recordedItems, items []events.Item) *NondeterminismError {
	e := &NondeterminismError{Path: path}
	switch {
	case rec.LLM != llm:
		e.Field, e.Want, e.Got = "llm", rec.LLM, llm
	case rec.Parts.Instructions != now.Instructions:
		e.Field, e.Want, e.Got = "instructions", short(rec.Parts.Instructions), short(now.Instructions)
	case rec.Parts.Tools != now.Tools:
		e.Field, e.Want, e.Got = "tools", short(rec.Parts.Tools), short(now.Tools)
		if rec.Parts.ToolHashes != nil { // recorded with each tool's hash: name the first that changed
			if changed := changedTools(rec.Parts.ToolHashes, now.ToolHashes); len(changed) > 0 {
				name := strings.TrimLeft(changed[0], "+-")
				e.Field, e.Want, e.Got = "tools."+name, orNone(rec.Parts.ToolHashes[name]), orNone(now.ToolHashes[name])
			}
		}
	case rec.Parts.Settings != now.Settings:
		e.Field, e.Want, e.Got = "settings", short(rec.Parts.Settings), short(now.Settings)
	default:
		for i := 0; i < len(recordedItems) && i < len(items); i++ {
			a, b := events.MustMarshal(recordedItems[i]), events.MustMarshal(items[i])
			if string(a) != string(b) {
				field, want, got := jsonDiff(a, b)
				e.Field, e.Want, e.Got = "items["+strconv.Itoa(i)+"]"+field, want, got
				return e
			}
		}
		e.Field = "items"
		e.Want, e.Got = strconv.Itoa(len(recordedItems))+" items", strconv.Itoa(len(items))+" items"
		if len(recordedItems) == len(items) { // the same conversation, built into another request
			e.Field = "request (the same conversation; the context manager built another request: window, budgets or version)"
			e.Want, e.Got = fmt.Sprintf("%d items sent", rec.Parts.Items), fmt.Sprintf("%d items sent", now.Items)
		}
	}
	return e
}

// orNone is a part's hash, or "none" where the request had no such part.
func orNone(h string) string {
	if h == "" {
		return "none"
	}
	return h
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// jsonDiff returns the first differing path between two JSON documents and the
// values there, in canonical JSON.
func jsonDiff(a, b []byte) (path, want, got string) {
	var va, vb any
	_ = json.Unmarshal(a, &va)
	_ = json.Unmarshal(b, &vb)
	return diffValues("", va, vb)
}

func diffValues(path string, a, b any) (string, string, string) {
	ma, aok := a.(map[string]any)
	mb, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range ma {
			keys[k] = true
		}
		for k := range mb {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			if !reflect.DeepEqual(ma[k], mb[k]) {
				return diffValues(path+"."+k, ma[k], mb[k])
			}
		}
	}
	sa, aok := a.([]any)
	sb, bok := b.([]any)
	if aok && bok && len(sa) == len(sb) {
		for i := range sa {
			if !reflect.DeepEqual(sa[i], sb[i]) {
				return diffValues(path+"["+strconv.Itoa(i)+"]", sa[i], sb[i])
			}
		}
	}
	return path, render(a), render(b)
}

func render(v any) string {
	if v == nil {
		return "absent"
	}
	b, _ := events.Marshal(v)
	return string(b)
}

// DiffJSON is jsonDiff for callers that compare recorded and produced events.
func DiffJSON(a, b []byte) (path, want, got string) { return jsonDiff(a, b) }
