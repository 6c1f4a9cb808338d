package contextmgr

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/turnlog/turnlog/events"
)

// Request is what Build made: the items a model request carries, what they cost,
// and whether a compaction would help.
type Request struct {
	Items []events.Item
	// Hashes are the SHA-256 of each item's canonical JSON, in order (kept as items
	// are prepared, so hashing a request costs one hash per item, not a marshal).
	Hashes  [][32]byte
	Tokens  int // the whole request: instructions, tool schemas and items
	Needed  int // what the request would have cost with nothing left out
	Layers  [numLayers]int
	Dropped int // conversation items left out to fit the window
	// Compact, when set, is the span of history a compaction should summarise: the
	// request did not fit without leaving items out, and older history (before the
	// current turn) is not summarised yet.
	Compact *Span
}

// Span is a range of conversation items a compaction summarises: it reads items
// [From, Covers) after the previous summary, and the new summary stands for the
// first Covers items.
type Span struct{ From, Covers int }

type segment struct {
	idx    []int
	tokens int
	layer  Layer
	pinned bool
	score  int
}

// Build makes the request for the conversation as prepared. turnStart is the index
// of the current turn's first item (its user message): what comes from it on is the
// current turn's trace, and its last step (the calls the model just made, with their
// results) is never left out. The request never exceeds the window: if even the items that
// may never be left out do not fit, Build returns an *OverflowError.
func (p *Prepared) Build(turnStart int) (Request, error) {
	n := len(p.items)
	covers := min(p.Covered(), n)
	latestUser, lastFailed, planCall := p.lastUser, p.lastFailed, p.lastPlan
	pinnedItems := map[int]bool{latestUser: true}
	if lastFailed >= 0 {
		pinnedItems[lastFailed] = true
		pinnedItems[p.callOf(lastFailed)] = true
	}
	if planCall >= 0 {
		pinnedItems[planCall] = true
		pinnedItems[p.outputOf(planCall)] = true
	}
	// The calls the model just made and their results: it asked for them.
	for i := n - 1; i >= max(turnStart, 0) && isToolItem(p.items[i].src); i-- {
		pinnedItems[i] = true
	}
	// From the summarised history: the latest user messages, and the pins above.
	var include []int
	users, lowest := 0, covers
	for i := range pinnedItems {
		if i >= 0 {
			lowest = min(lowest, i)
		}
	}
	for i := covers - 1; i >= 0 && (users < p.m.cfg.KeepUserMessages || i >= lowest); i-- {
		it := p.items[i]
		if it.src.Type == events.ItemMessage && it.src.Role == "user" && users < p.m.cfg.KeepUserMessages {
			users++
			pinnedItems[i] = true
		}
		if pinnedItems[i] {
			include = append(include, i)
		}
	}
	for i := covers; i < n; i++ {
		if p.items[i].src.Type != events.ItemContextSummary {
			include = append(include, i)
		}
	}
	slices.Sort(include)

	segs := p.segments(include, pinnedItems, turnStart, covers)
	nscored := len(segs) // the summary, appended next, is pinned: never scored
	if p.lastSummary >= 0 {
		s := p.items[p.lastSummary]
		segs = append(segs, segment{idx: []int{p.lastSummary}, tokens: s.tokens, layer: LayerSummary, pinned: true})
	}

	req := Request{}
	req.Layers[LayerRules], req.Layers[LayerTools] = p.m.rulesTokens, p.m.toolsTokens
	for _, s := range segs {
		req.Layers[s.layer] += s.tokens
	}
	total := func() int {
		t := 0
		for _, v := range req.Layers {
			t += v
		}
		return t
	}
	window := p.m.cfg.Window
	req.Needed = total()
	dropped := map[int]bool{}
	if total() > window {
		if covers < turnStart {
			for _, s := range segs {
				if !s.pinned && s.idx[0] >= covers && s.idx[0] < turnStart {
					req.Compact = &Span{From: covers, Covers: turnStart}
					break
				}
			}
		}
		req.Layers[LayerSummary] += markerTokens
		drop := func(s *segment) {
			for _, i := range s.idx {
				dropped[i] = true
			}
			req.Layers[s.layer] -= s.tokens
			s.tokens = 0
		}
		// Scores only matter when something must go.
		goal := goalWords(p.items, latestUser)
		for i := range segs[:nscored] {
			segs[i].score = p.score(segs[i], i, nscored, goal, turnStart)
		}
		order := p.dropOrder(segs)
		// First each layer back within its budget, then anything until the request fits.
		for _, i := range order {
			if l := segs[i].layer; req.Layers[l] > p.m.cfg.Budget(l) && total() > window {
				drop(&segs[i])
			}
		}
		for _, i := range order {
			if total() <= window {
				break
			}
			if segs[i].tokens > 0 {
				drop(&segs[i])
			}
		}
		if total() > window {
			return Request{}, &OverflowError{Tokens: total(), Window: window}
		}
	}
	req.Tokens = total()
	req.Dropped = len(dropped)
	req.Items, req.Hashes = p.assemble(include, dropped)
	return req, nil
}

// markerTokens is what the note about left-out items costs, at most.
const markerTokens = 48

// segments groups the included items: a message alone, a tool call with its output.
func (p *Prepared) segments(include []int, pinned map[int]bool, turnStart, covers int) []segment {
	byCall := map[string]int{}
	var segs []segment
	for _, i := range include {
		it := p.items[i]
		if it.src.Type == events.ItemFunctionCallOutput {
			if s, ok := byCall[it.src.CallID]; ok {
				segs[s].idx = append(segs[s].idx, i)
				segs[s].tokens += it.tokens
				segs[s].pinned = segs[s].pinned || pinned[i]
				continue
			}
		}
		s := segment{idx: []int{i}, tokens: it.tokens, pinned: pinned[i]}
		switch {
		case it.src.Type == events.ItemMessage && it.src.Role == "user":
			s.layer = LayerGoal
		case it.tool != "" && slices.Contains(p.m.cfg.FileTools, it.tool):
			s.layer = LayerFiles
		case i >= turnStart:
			s.layer = LayerTrace
		default:
			s.layer = LayerSummary
		}
		if it.src.Type == events.ItemFunctionCall {
			byCall[it.src.CallID] = len(segs)
		}
		segs = append(segs, s)
	}
	return segs
}

// score orders what may be left out: higher is kept longer. It weighs recency,
// relevance to the goal (words the latest user message shares), the source (what a
// person said over what a model said over what a tool returned; a loaded skill over
// all), whether a failure is still unresolved, and risk (a refusal the model should
// not try again).
func (p *Prepared) score(s segment, pos, count int, goal map[string]bool, turnStart int) int {
	score := 1000 * (pos + 1) / max(count, 1)
	first := p.items[s.idx[0]]
	shared := 0
	for _, i := range s.idx {
		for _, w := range p.items[i].words {
			if goal[w] {
				shared++
			}
		}
	}
	score += 60 * min(shared, 5)
	switch {
	case first.src.Type == events.ItemMessage && first.src.Role == "user":
		score += 200
	case first.src.Type == events.ItemMessage:
		score += 100
	}
	for _, i := range s.idx {
		it := p.items[i]
		if it.failed && !p.resolvedAfter(i) {
			score += 300
		}
		if it.denied {
			score += 200
		}
	}
	if s.idx[0] >= turnStart {
		score += 500
	}
	if first.tool != "" && slices.Contains(p.m.cfg.TrustedTools, first.tool) {
		score += 600 // a loaded skill stays while anything else can go
	}
	return score
}

// resolvedAfter says whether the tool of the failed output at i later succeeded.
func (p *Prepared) resolvedAfter(i int) bool {
	last, ok := p.lastSuccess[p.items[i].tool]
	return ok && last > i
}

// dropOrder lists the segments that may be left out, lowest score first (the older
// first on a tie).
func (p *Prepared) dropOrder(segs []segment) []int {
	var order []int
	for i, s := range segs {
		if !s.pinned {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return segs[a].score - segs[b].score })
	return order
}

// assemble lists the request's items and their hashes: the summary first, then the
// included items in conversation order, with a note where items were left out.
func (p *Prepared) assemble(include []int, dropped map[int]bool) ([]events.Item, [][32]byte) {
	out := make([]events.Item, 0, len(include)+2)
	hashes := make([][32]byte, 0, len(include)+2)
	if p.lastSummary >= 0 {
		out = append(out, p.items[p.lastSummary].item)
		hashes = append(hashes, p.items[p.lastSummary].hash)
	}
	noted := false
	tokens := 0
	for _, i := range include {
		if dropped[i] {
			tokens += p.items[i].tokens
		}
	}
	for _, i := range include {
		if dropped[i] {
			if !noted {
				noted = true
				note := events.Item{Type: events.ItemMessage, Role: "user", Content: fmt.Sprintf(
					"[turnlog: %d earlier items (%d tokens) are left out of this request to fit the context window; the session log keeps them.]",
					len(dropped), tokens)}
				out = append(out, note)
				hashes = append(hashes, sha256.Sum256(events.MustMarshal(note)))
			}
			continue
		}
		out = append(out, p.items[i].item)
		hashes = append(hashes, p.items[i].hash)
	}
	return out, hashes
}

func isToolItem(it events.Item) bool {
	return it.Type == events.ItemFunctionCall || it.Type == events.ItemFunctionCallOutput
}

func (p *Prepared) callOf(output int) int {
	id := p.items[output].src.CallID
	for i := output - 1; i >= 0; i-- {
		if p.items[i].src.Type == events.ItemFunctionCall && p.items[i].src.CallID == id {
			return i
		}
	}
	return output
}

func (p *Prepared) outputOf(call int) int {
	id := p.items[call].src.CallID
	for i := call + 1; i < len(p.items); i++ {
		if p.items[i].src.Type == events.ItemFunctionCallOutput && p.items[i].src.CallID == id {
			return i
		}
	}
	return call
}

func goalWords(items []prep, latestUser int) map[string]bool {
	out := map[string]bool{}
	if latestUser >= 0 {
		for _, w := range items[latestUser].words {
			out[w] = true
		}
	}
	return out
}

// sortedWords lists the distinct words of four letters or more in s, lower-cased.
func sortedWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		if len(w) >= 4 {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func itoa(n int) string { return strconv.Itoa(n) }
