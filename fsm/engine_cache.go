package fsm

// The conversations kept in memory between turns.

import (
	"context"

	"github.com/turnlog/turnlog/projection"
)

// conversation returns the committed conversation of a session, from memory when the
// cache is current, else from the history projection (once per turn at most).
func (e *Engine) conversation(ctx context.Context, s projection.Session) (*conversation, error) {
	e.mu.Lock()
	c, ok := e.cache.get(s.ID)
	e.mu.Unlock()
	if ok && c.lastCommitSeq == s.LastCommitSeq {
		return c.conv, nil
	}
	if app := e.apps[s.App]; app != nil && app.Workspace != nil {
		// Its turns ran elsewhere since (or it was not kept): what this node's file
		// tools remember of its reads may predate a revert there.
		app.Workspace.Unread(s.ID, nil)
	}
	items, err := e.store.History(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	conv := &conversation{}
	conv.append(items...)
	e.remember(s.ID, s.LastCommitSeq, conv) // a resume of this very turn finds it too
	return conv, nil
}

func (e *Engine) remember(session string, commitSeq int64, conv *conversation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	conv.commitSeq = commitSeq
	e.cache.put(session, &sessionCache{lastCommitSeq: commitSeq, conv: conv})
}

func (e *Engine) forget(session string) {
	e.mu.Lock()
	e.cache.remove(session)
	e.mu.Unlock()
}

// CachedSessions is how many sessions' conversations the engine keeps in memory
// now: at most Options.CacheSessions, the most recently used.
func (e *Engine) CachedSessions() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cache.len()
}
