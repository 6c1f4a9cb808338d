package fsm

import "container/list"

// sessionCache is one session's committed conversation, as of its last commit.
type sessionCache struct {
	lastCommitSeq int64
	conv          *conversation
}

// conversationCache keeps the conversations of at most size sessions in memory,
// evicting the least recently used: an evicted one is read again from the history
// projection when its session next runs. Not safe for concurrent use (the engine
// holds its lock).
type conversationCache struct {
	size  int
	order *list.List               // front: most recently used; values are session ids
	items map[string]*list.Element // session → its element
	byID  map[string]*sessionCache
}

func newConversationCache(size int) *conversationCache {
	return &conversationCache{size: size, order: list.New(), items: map[string]*list.Element{}, byID: map[string]*sessionCache{}}
}

// get returns the session's entry and marks it used.
func (c *conversationCache) get(session string) (*sessionCache, bool) {
	el, ok := c.items[session]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return c.byID[session], true
}

// put stores the session's entry, evicting the least recently used past size.
func (c *conversationCache) put(session string, entry *sessionCache) {
	if el, ok := c.items[session]; ok {
		c.order.MoveToFront(el)
		c.byID[session] = entry
		return
	}
	c.items[session] = c.order.PushFront(session)
	c.byID[session] = entry
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		id := oldest.Value.(string)
		c.order.Remove(oldest)
		delete(c.items, id)
		delete(c.byID, id)
	}
}

func (c *conversationCache) remove(session string) {
	if el, ok := c.items[session]; ok {
		c.order.Remove(el)
		delete(c.items, session)
		delete(c.byID, session)
	}
}

func (c *conversationCache) len() int { return c.order.Len() }
