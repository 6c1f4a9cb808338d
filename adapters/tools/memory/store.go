package memory

import (
	"context"
	"errors"

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

// NoStore is the store of commands that run no turn (doctor, policy check): the tools
// exist, so the apps load the same, and a call says why it cannot work.
type NoStore struct{}

var errNoStore = errors.New("memory: this command has no database open")

func (NoStore) SaveMemory(context.Context, Memory) (int64, bool, error) { return 0, false, errNoStore }
func (NoStore) SearchMemory(context.Context, string, string, string, int) ([]Hit, error) {
	return nil, errNoStore
}
func (NoStore) MemoryVectors(context.Context, string, string, int) ([]Hit, error) {
	return nil, errNoStore
}
func (NoStore) SessionOwner(context.Context, string) (string, string, error) {
	return "", "", errNoStore
}

// Embedder turns texts into vectors (an OpenAI-compatible /embeddings endpoint).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
