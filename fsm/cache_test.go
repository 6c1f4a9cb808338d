package fsm

import (
	"fmt"
	"testing"
)

// TestConversationCacheKeepsTheMostRecentlyUsed: past its size the cache evicts the
// session used longest ago — a get counts as a use — and never holds more.
func TestConversationCacheKeepsTheMostRecentlyUsed(t *testing.T) {
	t.Parallel()
	c := newConversationCache(3)
	for i := range 3 {
		c.put(fmt.Sprintf("s%d", i), &sessionCache{lastCommitSeq: int64(i)})
	}
	c.get("s0")                                  // s1 is now the least recently used
	c.put("s3", &sessionCache{lastCommitSeq: 3}) // evicts s1
	c.put("s2", &sessionCache{lastCommitSeq: 22})
	if _, ok := c.get("s1"); ok {
		t.Fatal("the least recently used session was kept")
	}
	for id, seq := range map[string]int64{"s0": 0, "s2": 22, "s3": 3} {
		if e, ok := c.get(id); !ok || e.lastCommitSeq != seq {
			t.Fatalf("%s: %+v %v", id, e, ok)
		}
	}
	for i := range 100 {
		c.put(fmt.Sprintf("more%d", i), &sessionCache{})
		if c.len() > 3 {
			t.Fatalf("the cache holds %d sessions, past its size of 3", c.len())
		}
	}
	c.remove("more99")
	if _, ok := c.get("more99"); ok || c.len() != 2 {
		t.Fatalf("after remove: %d", c.len())
	}
}
