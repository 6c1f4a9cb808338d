package fsm

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/turnlog/turnlog/events"
)

// TestATruncatedConversationIsTheOneBuiltFromItsItems: after any mix of skill loads
// (loaded, failed, called again), summaries and plain items, truncate(n) leaves the
// conversation as a fresh one built from its first n items: the same skills in
// context, newest skill, summary count, what the newest summary covers and hash.
func TestATruncatedConversationIsTheOneBuiltFromItsItems(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 19))
	skills := []string{"pdf", "sql", "git"}
	for round := 0; round < 300; round++ {
		var items []events.Item
		for i := 0; i < 5+rng.IntN(40); i++ {
			call := fmt.Sprintf("c%d", i)
			switch rng.IntN(5) {
			case 0:
				args, _ := json.Marshal(map[string]string{"name": skills[rng.IntN(len(skills))]})
				items = append(items, events.Item{Type: events.ItemFunctionCall, CallID: call, Name: LoadSkillTool, Arguments: args})
				switch rng.IntN(3) {
				case 0:
					items = append(items, events.Item{Type: events.ItemFunctionCallOutput, CallID: call, Output: "# Skill body"})
				case 1:
					items = append(items, events.Item{Type: events.ItemFunctionCallOutput, CallID: call, Output: `{"error":{"kind":"denied"}}`})
				}
			case 1:
				items = append(items, events.Item{Type: events.ItemContextSummary, Content: "summary", Covers: rng.IntN(len(items) + 1)})
			default:
				items = append(items, events.UserMessage(fmt.Sprintf("message %d", i)))
			}
		}
		got := &conversation{}
		got.append(items...)
		for _, n := range []int{rng.IntN(len(items) + 1), rng.IntN(len(items) + 1)} {
			n = min(n, len(got.items))
			got.truncate(n)
			want := &conversation{}
			want.append(items[:n]...)
			if !sameSkillState(got, want) || got.summaries != want.summaries || got.covered != want.covered || got.hash() != want.hash() {
				t.Fatalf("round %d, truncated to %d of %d: skills %v %v %q, summaries %d, covered %d; built: %v %v %q, %d, %d",
					round, n, len(items), got.skillCalls, got.skillAt, got.lastSkill, got.summaries, got.covered,
					want.skillCalls, want.skillAt, want.lastSkill, want.summaries, want.covered)
			}
			got.append(items[n:min(len(items), n+3)]...) // it grows on from there as a fresh one would
			items = append(items[:n:n], items[n:min(len(items), n+3)]...)
		}
	}
}

func sameSkillState(a, b *conversation) bool {
	norm := func(m map[string]string) map[string]string {
		if len(m) == 0 {
			return nil
		}
		return m
	}
	normAt := func(m map[string]int) map[string]int {
		if len(m) == 0 {
			return nil
		}
		return m
	}
	return reflect.DeepEqual(norm(a.skillCalls), norm(b.skillCalls)) && reflect.DeepEqual(normAt(a.skillAt), normAt(b.skillAt)) && a.lastSkill == b.lastSkill
}
