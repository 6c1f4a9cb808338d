package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// Wiring is what the binary plugs into configs: the Go function tools it offers and
// an optional wrapper around every model (tests count and gate calls with it).
type Wiring struct {
	Functions turnlog.Functions
	WrapModel func(llmID string, m fsm.Model) fsm.Model
	Stdin     io.Reader // where run and resume --ask read a person's answers (default os.Stdin)
}

// DefaultWiring is the binary's: the offline demo's function tools.
func DefaultWiring() Wiring { return Wiring{Functions: demo.Functions()} }

func schemaVersion() int { return sqlite.SchemaVersion() }

// options are the assembly's options for the config at path (none: the offline demo).
func (c *cliContext) options(path string, f commonFlags) turnlog.Options {
	o := turnlog.Options{Config: path, Functions: c.wiring.Functions, WrapModel: c.wiring.WrapModel, Workspace: c.workspace, WorkspaceScope: c.workspaceScope,
		NeverDial: c.neverDial, Protected: c.protected, DB: f.db, Synchronous: f.synchronous, CheckpointPages: f.checkpointPages, Logger: c.logger,
		OTLPEndpoint: f.otlpEndpoint, Version: Version, LeaseTTL: f.leaseTTL, CacheSessions: f.cacheSessions}
	if path == "" {
		o.Config, o.ConfigData = "examples/demo/agent.yaml", demo.Config
	}
	return o
}

// loadApps builds the config's apps without a database (commands that run no turn);
// their MCP servers end with the command.
func (c *cliContext) loadApps(ctx context.Context, path string) ([]*fsm.App, error) {
	apps, err := turnlog.LoadApps(ctx, c.options(path, commonFlags{}))
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, apps.Close)
	return apps.List, nil
}

// openStore opens the log f names, and what several nodes share of it (nil: one
// node, a SQLite file).
func openStore(ctx context.Context, f commonFlags) (logStore, fsm.Cluster, error) {
	if turnlog.IsPostgres(f.db) {
		s, err := postgres.Open(ctx, f.db, postgres.Options{})
		if err != nil {
			return nil, nil, fmt.Errorf("open %s: %w", shownDB(f.db), err)
		}
		return s, s, nil
	}
	s, err := sqlite.Open(ctx, f.db, sqlite.Options{Synchronous: f.synchronous})
	if err != nil {
		return nil, nil, err
	}
	return s, nil, nil
}

// logStore is what the commands that read or change the log (export, rebuild,
// erase, migrate) use, of either store.
type logStore interface {
	turnlog.Store
	Rebuild(ctx context.Context) (int64, error)
}

// open opens the log and builds the engine over the configured apps.
//
// The commands that run tools open it: the database (with its -wal and -shm) and the
// API keys file must then lie outside every directory a sandbox sees, or the apps do
// not load.
func (c *cliContext) open(ctx context.Context, f commonFlags) (*turnlog.Turnlog, error) {
	return turnlog.Open(ctx, c.options(f.config, f))
}

// openToRead opens the log for a command that only reads it (sessions, show): the
// apps need none of their secrets and start no MCP server.
func (c *cliContext) openToRead(ctx context.Context, f commonFlags) (*turnlog.Turnlog, error) {
	opts := c.options(f.config, f)
	opts.ReadOnly = true
	return turnlog.Open(ctx, opts)
}

// shownDB is the database as it may be printed: a PostgreSQL URL without its
// password, wherever the URL holds one (user info, or a password or sslpassword
// parameter).
func shownDB(db string) string {
	if !turnlog.IsPostgres(db) {
		return db
	}
	u, err := url.Parse(db)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	q := u.Query()
	for name := range q {
		if strings.Contains(strings.ToLower(name), "password") {
			q.Set(name, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.Redacted()
}

// databaseAddrs are the host:port addresses a PostgreSQL URL connects to, which no
// sandboxed command may reach (none for a SQLite file): the URL's hosts, its host
// and port parameters, and PGHOST and PGPORT where the URL names none.
func databaseAddrs(db string) []string {
	if !turnlog.IsPostgres(db) {
		return nil
	}
	u, err := url.Parse(db)
	if err != nil {
		return nil
	}
	q := u.Query()
	port := q.Get("port")
	if port == "" {
		port = os.Getenv("PGPORT")
	}
	if port == "" {
		port = "5432"
	}
	hosts := u.Host
	if h := q.Get("host"); h != "" {
		hosts += "," + h
	}
	if strings.Trim(hosts, ",") == "" {
		hosts = os.Getenv("PGHOST")
	}
	var out []string
	for _, hp := range strings.Split(hosts, ",") { // pgx takes several hosts, comma-separated
		if hp == "" || strings.HasPrefix(hp, "/") {
			continue // a unix socket: no network address
		}
		if _, _, err := net.SplitHostPort(hp); err != nil {
			hp = net.JoinHostPort(strings.Trim(hp, "[]"), port)
		}
		out = append(out, hp)
	}
	return out
}
