package fsm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/events"
)

// PurposeCompaction marks a model request that asks for a compaction summary.
const PurposeCompaction = "compaction"

// view is the conversation prepared for an agent's context manager, kept as the
// conversation grows.
func (c *conversation) view(m *contextmgr.Manager) *contextmgr.Prepared {
	if c.views == nil {
		c.views = map[*contextmgr.Manager]*contextmgr.Prepared{}
	}
	v, ok := c.views[m]
	if !ok {
		v = m.Prepare()
		v.Append(c.items...)
		c.views[m] = v
	}
	return v
}

// contextItems builds a context-managed agent's request items for its model call n.
// When they do not fit without leaving items out and older history is not summarised
// yet, it compacts first (a recorded activity at `<agent>/compact/<n>`, returned to
// be committed with the model call) and builds again.
func (r *run) contextItems(n int) ([]events.Item, [][32]byte, int64, []events.Event, *ResultError) {
	ag := r.agent
	view := r.conv.view(r.face(ag).ctxm)
	path := r.prefix + fmt.Sprintf("%s/model/%d", ag.Name, n)
	req, err := view.Build(r.base)
	if err != nil {
		return nil, nil, 0, nil, &ResultError{Code: events.CodeContextOverflow, Path: path, Message: err.Error()}
	}
	if req.Compact == nil {
		return req.Items, req.Hashes, int64(req.Tokens), nil, nil
	}
	cpath := r.prefix + fmt.Sprintf("%s/compact/%d", ag.Name, n)
	cc, fail := r.compaction(view, *req.Compact, cpath)
	if fail != nil {
		return nil, nil, 0, nil, fail
	}
	cc.TokensBefore = req.Needed
	r.conv.append(summaryItem(ag.Name, cc))
	if req, err = view.Build(r.base); err != nil {
		return nil, nil, 0, nil, &ResultError{Code: events.CodeContextOverflow, Path: path, Message: err.Error()}
	}
	cc.TokensAfter = req.Tokens
	ev, err := events.New(r.turn, cpath, cc)
	if err != nil {
		return nil, nil, 0, nil, &ResultError{Code: events.CodeInternal, Path: cpath, Message: err.Error()}
	}
	return req.Items, req.Hashes, int64(req.Tokens), []events.Event{ev}, nil
}

// compaction summarises span: the recorded summary at path when there is one (a
// replay calls no model), else the summariser's answer, sectioned, with every
// identifier of the span kept verbatim.
func (r *run) compaction(view *contextmgr.Prepared, span contextmgr.Span, path string) (*events.ContextCompacted, *ResultError) {
	ag := r.agent
	model, llm := ag.Model, ag.LLM
	if ag.SummaryModel != nil {
		model, llm = ag.SummaryModel, ag.SummaryLLM
	}
	items := view.CompactionRequest(span)
	hash := compactionHash(llm, items)
	cc, _, found, fail := replayed[*events.ContextCompacted](r, events.TypeContextCompacted, path,
		fmt.Sprintf("the recording has no compaction here, and a replay-only engine calls no model (%s)", llm))
	if fail != nil {
		return nil, fail
	}
	if found {
		if cc.From != span.From || cc.Covers != span.Covers || cc.RequestHash != hash {
			return nil, &ResultError{Code: events.CodeNondeterminism, Path: path, Message: fmt.Sprintf(
				"nondeterminism at %s: the compaction differs (recorded items %d–%d, request %s; now %d–%d, request %s)",
				path, cc.From, cc.Covers, short(cc.RequestHash), span.From, span.Covers, short(hash))}
		}
		r.usage = r.usage.Add(cc.Usage)
		r.noteSpend(events.TypeContextCompacted, path, ag.Name, cc.Usage, cc.Cost, cc.Day, r.logged.has(events.TypeContextCompacted, path))
		out := *cc
		return &out, nil
	}
	callCtx, stop := r.cancelContext()
	defer stop()
	callCtx, endSpan := r.traced(callCtx, SpanStart{Operation: SpanChat, Name: llm, Path: path})
	began := time.Now()
	resp, err := model.Call(callCtx, ModelRequest{LLM: llm, Agent: ag.Name, Instructions: contextmgr.CompactionInstructions,
		Items: items, Settings: []byte(`{}`), Purpose: PurposeCompaction})
	cost := r.app.costOf(llm, resp.Usage)
	r.e.opts.Observer.ModelCalled(ModelCall{App: r.app.Name, Agent: ag.Name, LLM: llm, Took: time.Since(began), Failed: err != nil, Usage: resp.Usage, Cost: cost})
	endSpan(modelSpanEnd(resp.Usage, err))
	if err != nil {
		return nil, &ResultError{Code: events.CodeModelFailed, Path: path, Message: fmt.Sprintf("compaction by model %s failed: %v", llm, err)}
	}
	if strings.IndexByte(resp.Text, 0) >= 0 {
		return nil, &ResultError{Code: events.CodeInvalidModelOutput, Path: path,
			Message: fmt.Sprintf("compaction by model %s answered a NUL character, which turnlog's log cannot keep", llm)}
	}
	ids := view.Identifiers(span)
	sections := contextmgr.KeepIdentifiers(contextmgr.ParseSummary(resp.Text), ids)
	r.usage = r.usage.Add(resp.Usage)
	day := r.app.recordedDay(r.e.opts.Clock())
	r.noteSpend(events.TypeContextCompacted, path, ag.Name, resp.Usage, cost, day, false)
	return &events.ContextCompacted{Agent: ag.Name, LLM: llm, RequestHash: hash, From: span.From, Covers: span.Covers,
		Sections: sections, Identifiers: ids, Usage: resp.Usage, Cost: cost, Day: day}, nil
}

func compactionHash(llm string, items []events.Item) string {
	h := sha256.New()
	h.Write([]byte(llm + "\x00" + contextmgr.CompactionInstructions + "\x00"))
	for _, it := range items {
		h.Write(events.MustMarshal(it))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// requestHashOf is the request hash of a context-managed request: its parts and the
// hashes of the items it carries (each computed once, when the item was prepared).
func requestHashOf(ag *Agent, f *agentFace, hashes [][32]byte) string {
	h := sha256.New()
	for _, part := range []string{ag.LLM, f.instructionsHash, ag.toolsHash, ag.settingsHash, strconv.Itoa(len(hashes))} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	for _, ih := range hashes {
		h.Write(ih[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func withoutSummaries(items []events.Item) []events.Item {
	out := make([]events.Item, 0, len(items))
	for _, it := range items {
		if it.Type != events.ItemContextSummary {
			out = append(out, it)
		}
	}
	return out
}

// summaryItem is the conversation item a compaction adds.
func summaryItem(agent string, cc *events.ContextCompacted) events.Item {
	return events.Item{Type: events.ItemContextSummary, Agent: agent, Content: contextmgr.RenderSummary(cc.Sections), Covers: cc.Covers}
}

// spanToCompact is what a compaction on request summarises: everything from what the
// newest summary covers up to the end of the committed conversation.
func spanToCompact(covered, end int) contextmgr.Span {
	return contextmgr.Span{From: covered, Covers: end}
}
