package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/turnlog/turnlog/projection"
)

// Memory and Hit are the store's read-model types (package projection).
type (
	Memory = projection.Memory
	Hit    = projection.MemoryHit
)

// Store keeps memories. Every method is scoped to one app and owner.
type Store interface {
	// SaveMemory stores m once per (app, owner, key): created says whether this call
	// wrote it.
	SaveMemory(ctx context.Context, m Memory) (id int64, created bool, err error)
	// SearchMemory lists memories matching any word of text, best bm25 first.
	SearchMemory(ctx context.Context, app, owner, text string, limit int) ([]Hit, error)
	// MemoryVectors lists the newest memories that have vectors.
	MemoryVectors(ctx context.Context, app, owner string, limit int) ([]Hit, error)
	// SessionOwner is the app and owner of a session.
	SessionOwner(ctx context.Context, session string) (app, owner string, err error)
}

// Binding is a Store bound after the tools are built (config loads before the
// database opens).
type Binding struct {
	mu    sync.RWMutex
	store Store
}

// Bind sets the store the tools use.
func (b *Binding) Bind(s Store) {
	b.mu.Lock()
	b.store = s
	b.mu.Unlock()
}

func (b *Binding) get() (Store, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.store == nil {
		return nil, fmt.Errorf("memory: no store is bound here")
	}
	return b.store, nil
}

func (b *Binding) SaveMemory(ctx context.Context, m Memory) (int64, bool, error) {
	s, err := b.get()
	if err != nil {
		return 0, false, err
	}
	return s.SaveMemory(ctx, m)
}

func (b *Binding) SearchMemory(ctx context.Context, app, owner, text string, limit int) ([]Hit, error) {
	s, err := b.get()
	if err != nil {
		return nil, err
	}
	return s.SearchMemory(ctx, app, owner, text, limit)
}

func (b *Binding) MemoryVectors(ctx context.Context, app, owner string, limit int) ([]Hit, error) {
	s, err := b.get()
	if err != nil {
		return nil, err
	}
	return s.MemoryVectors(ctx, app, owner, limit)
}

func (b *Binding) SessionOwner(ctx context.Context, session string) (string, string, error) {
	s, err := b.get()
	if err != nil {
		return "", "", err
	}
	return s.SessionOwner(ctx, session)
}

// Embedder turns texts into vectors (an OpenAI-compatible /embeddings endpoint).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
