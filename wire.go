package main

import (
	"context"
	"crypto/rand"
	"io"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/adapters/sqlite"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
)

// wiring is what the binary plugs into configs: the Go function tools it offers and
// an optional wrapper around every model (tests count and gate calls with it).
type wiring struct {
	functions config.Functions
	wrapModel func(llmID string, m fsm.Model) fsm.Model
	stdin     io.Reader // where run reads a person's answers (default os.Stdin)
}

func defaultWiring() wiring { return wiring{functions: demo.Functions()} }

func schemaVersion() int { return sqlite.SchemaVersion() }

func (c *cliContext) loadApps(path string) ([]*fsm.App, error) {
	opts := config.Options{Functions: c.wiring.functions, WrapModel: c.wiring.wrapModel, Workspace: c.workspace, Memory: c.memory, MCP: c.mcp,
		NeverDial: c.neverDial, Protected: c.protected}
	if path == "" {
		return config.Load("examples/demo/agent.yaml", demo.Config, opts)
	}
	return config.LoadFile(path, opts)
}

func openStore(ctx context.Context, f commonFlags) (*sqlite.Store, error) {
	return sqlite.Open(ctx, f.db, sqlite.Options{Synchronous: f.synchronous})
}

// observer is what a command reports metrics to: the engine's events and commits.
type observer interface {
	fsm.Observer
	Committed(events int)
}

// newIDs returns a goroutine-safe source of monotonic ULIDs.
func newIDs() func() string {
	var mu sync.Mutex
	entropy := ulid.Monotonic(rand.Reader, 0)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return ulid.MustNew(ulid.Timestamp(time.Now()), entropy).String()
	}
}

// openEngine opens the store and builds the engine over the configured apps; obs,
// when given, hears the engine and the store.
//
// The commands that run tools open it: the database (with its -wal and -shm) and the
// API keys file must then lie outside every directory a sandbox sees, or the apps do
// not load.
func (c *cliContext) openEngine(ctx context.Context, f commonFlags, obs ...observer) (*sqlite.Store, *fsm.Engine, error) {
	c.protected = append(c.protected, f.db, f.db+"-wal", f.db+"-shm")
	apps, err := c.loadApps(f.config)
	if err != nil {
		return nil, nil, err
	}
	sopts := sqlite.Options{Synchronous: f.synchronous}
	eopts := fsm.Options{Clock: time.Now, NewID: newIDs()}
	for _, o := range obs {
		sopts.OnCommit, eopts.Observer = o.Committed, o
	}
	store, err := sqlite.Open(ctx, f.db, sopts)
	if err != nil {
		return nil, nil, err
	}
	c.memory.Bind(store)
	e, err := fsm.New(store, apps, eopts)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, e, nil
}
