package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
)

// Limits of the memory tools.
const (
	MaxText        = 4000
	MaxLabel       = 100
	DefaultResults = 5
	MaxResults     = 20
	vectorScan     = 5000 // the newest memories a hybrid search compares vectors with
	rrfK           = 60   // reciprocal rank fusion's constant
)

type saveArgs struct {
	Text  string `json:"text" jsonschema:"minLength=1,maxLength=4000,description=what to remember in a sentence or a few"`
	Label string `json:"label,omitempty" jsonschema:"maxLength=100,description=a short topic to file it under"`
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"minLength=1,description=words to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=20,description=how many memories at most (default 5)"`
}

// Tools are memory_save and memory_search over store; emb, when not nil, adds
// vectors to saves and fuses vector similarity into searches.
func Tools(store Store, emb Embedder, clock func() time.Time) []fsm.Tool {
	save := functool.MustNew("memory_save", "Save something worth remembering about this user for later sessions (facts, preferences, decisions). Saved memories are visible to this user only.",
		func(ctx context.Context, a saveArgs) (any, error) {
			call, app, owner, err := caller(ctx, store)
			if err != nil {
				return nil, err
			}
			m := Memory{App: app, Owner: owner, Key: call.Session + "/" + call.Turn + "/" + call.Path, Label: a.Label, Text: a.Text, At: clock().UTC()}
			if emb != nil {
				vs, err := emb.Embed(ctx, []string{a.Text})
				if err != nil {
					return nil, fmt.Errorf("embeddings: %w", err)
				}
				m.Vector = vs[0]
			}
			id, created, err := store.SaveMemory(ctx, m)
			if err != nil {
				return nil, err
			}
			return map[string]any{"id": id, "saved": created}, nil
		})
	search := functool.MustNew("memory_search", "Search this user's saved memories (from any of their sessions) by words; best matches first.",
		func(ctx context.Context, a searchArgs) (any, error) {
			_, app, owner, err := caller(ctx, store)
			if err != nil {
				return nil, err
			}
			limit := a.Limit
			if limit == 0 {
				limit = DefaultResults
			}
			hits, err := store.SearchMemory(ctx, app, owner, a.Query, limit*4)
			if err != nil {
				return nil, err
			}
			if emb != nil {
				if hits, err = hybrid(ctx, store, emb, app, owner, a.Query, hits); err != nil {
					return nil, err
				}
			}
			truncated := len(hits) > limit
			if truncated {
				hits = hits[:limit]
			}
			if hits == nil {
				hits = []Hit{}
			}
			return map[string]any{"memories": hits, "truncated": truncated}, nil
		})
	return []fsm.Tool{&tool[saveArgs]{save, policy.ActWrite}, &tool[searchArgs]{search, policy.ActRead}}
}

// caller is the call a memory tool serves, and the app and user of its session:
// whose memories it may touch.
func caller(ctx context.Context, store Store) (fsm.CallInfo, string, string, error) {
	call, ok := fsm.CallInfoFrom(ctx)
	if !ok {
		return call, "", "", fmt.Errorf("memory tools run only inside a turn")
	}
	app, owner, err := store.SessionOwner(ctx, call.Session)
	return call, app, owner, err
}

// hybrid fuses the bm25 order with vector similarity (reciprocal rank fusion), so a
// memory that shares meaning but no word with the query is found too.
func hybrid(ctx context.Context, store Store, emb Embedder, app, owner, query string, words []Hit) ([]Hit, error) {
	qv, err := emb.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	all, err := store.MemoryVectors(ctx, app, owner, vectorScan)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(all, func(i, j int) bool { return cosine(qv[0], all[i].Vector) > cosine(qv[0], all[j].Vector) })
	score, byID := map[int64]float64{}, map[int64]Hit{}
	for rank, h := range words {
		score[h.ID] += 1 / float64(rrfK+rank+1)
		byID[h.ID] = h
	}
	for rank, h := range all {
		score[h.ID] += 1 / float64(rrfK+rank+1)
		byID[h.ID] = h
	}
	out := make([]Hit, 0, len(byID))
	for _, h := range byID {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool {
		if score[out[i].ID] != score[out[j].ID] {
			return score[out[i].ID] > score[out[j].ID]
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return -1
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return -1
	}
	return dot / math.Sqrt(na*nb)
}

// tool is a memory tool: idempotent (a save is keyed by its activity), and telling
// the policy it reads or writes the memory store.
type tool[A any] struct {
	*functool.Tool[A]
	action policy.Action
}

func (t *tool[A]) Spec() fsm.ToolSpec {
	s := t.Tool.Spec()
	s.Idempotent = true
	return s
}

func (t *tool[A]) PolicyCall(json.RawMessage) fsm.PolicyCall {
	return fsm.PolicyCall{Level: policy.L1, Actions: []policy.Action{t.action}}
}
