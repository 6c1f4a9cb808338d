package turnlog

import (
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/adapters/tools/memory"
	"github.com/turnlog/turnlog/fsm"
)

// secretsOptional says the apps are built without needing their secrets.
func (o Options) secretsOptional() bool { return o.ReplayOnly || o.ReadOnly || o.SecretsOptional }

// Options say how to assemble turnlog: where its apps are described, which Go
// function tools the program offers them, where the log is kept.
type Options struct {
	// Config is agent.yaml's path; relative paths in it start from its folder.
	Config string
	// ConfigData, when set, is agent.yaml's content (Config then only names it).
	ConfigData []byte
	// IgnoreWebhooks leaves the apps' webhooks out: their secrets are not read and
	// no turn writes a delivery (replaying a fixture).
	IgnoreWebhooks bool
	// ReplayOnly builds an engine that acts on nothing (fsm.Options.ReplayOnly): no
	// model is called, no tool runs, no MCP server is started and no webhook is
	// written; a replay on it diverges where its recording lacks an activity.
	ReplayOnly bool
	// Snapshot, with ReplayOnly, gives the tools a replay cannot build where it runs
	// by their recorded specs (a fixture's tools.json): MCP servers' tools, Go
	// functions this program does not offer, and HTTP and command tools, which then
	// need neither their secrets nor their files.
	Snapshot map[string]SnapshotTool
	// ReadOnly builds the apps for a program that only reads the log (turnlog
	// sessions, show): no secret is read and no MCP server is started (an agent's MCP
	// tools are known by name only); it must run no turn.
	ReadOnly bool
	// SecretsOptional builds the apps without the secrets their environment variables
	// hold (a tool left without one is unsigned): for a program that runs no turn but
	// needs the apps as they are (turnlog export --fixture).
	SecretsOptional bool
	// Functions are the Go function tools the apps may name (functool.New).
	Functions Functions
	// DB is the SQLite file of the log (Open creates it), or a postgres:// URL of the
	// PostgreSQL database several nodes share.
	DB string
	// Synchronous is SQLite's synchronous setting: FULL (the default, durable),
	// NORMAL or OFF.
	Synchronous string
	// CheckpointPages is the WAL size, in pages, at which turnlog checkpoints it
	// (default 1000); negative leaves checkpoints to a replication tool (Litestream).
	CheckpointPages int
	// CacheSessions bounds how many sessions' conversations the engine keeps in
	// memory between turns, evicting the least recently used (default 1024).
	CacheSessions int
	// LeaseTTL is how long a session's lease lasts unrenewed on a store several nodes
	// share, and so how soon another node takes over the turns of a node that went
	// away (default fsm.DefaultLeaseTTL).
	LeaseTTL time.Duration
	// Workspace, when set, replaces the policy workspace of every app that has one.
	Workspace string
	// WorkspaceScope, with Workspace, is whose each workspace under it is ("user",
	// "session"; default "shared": Workspace is the one workspace, as for turnlog run
	// --workspace). turnlog eval gives each run a workspace of its own: "session".
	WorkspaceScope string
	// NeverDial are addresses (host:port) no sandboxed command may reach, even where
	// a rule names them: the program's own listeners.
	NeverDial []string
	// Protected are files no sandbox may see (the API keys file); the database (with
	// its -wal and -shm) and the config are protected without being named.
	Protected []string
	// StateDir is where turnlog keeps what is its own besides the log — stdio MCP
	// servers' data directories (default $XDG_STATE_HOME/turnlog, else
	// ~/.local/state/turnlog). It must lie outside every workspace.
	StateDir string
	// Memory is the store of agents' memory tools; Open sets it to the log's store.
	Memory memory.Store
	// WrapModel, when set, wraps every registered model (call counting, gating).
	WrapModel func(llmID string, m fsm.Model) fsm.Model
	// HTTPClient, when set, is what embeddings and MCP clients use (tests).
	HTTPClient *http.Client
	// HTTPTransport, when set, carries HTTP tools' requests and webhook deliveries (tests).
	HTTPTransport http.RoundTripper
	// Logger hears of every turn that fails, is canceled or cannot be recorded, with
	// its session, turn and code (the zero value logs nothing).
	Logger zerolog.Logger
	// Tracer hears the spans of the engine's live work; OTLPEndpoint, when set and
	// Tracer is not, exports them as OpenTelemetry spans to an OTLP/HTTP endpoint
	// (http://host:4318), batched; Close sends what is left. Version is the
	// service.version they carry.
	Tracer       fsm.Tracer
	OTLPEndpoint string
	Version      string
	// Observer hears the engine (metrics); OnCommit the store's commits.
	Observer fsm.Observer
	OnCommit func(events int)
	// CancelGrace is how long a canceled turn waits for a tool that ignores its
	// context before recording it as abandoned (default 5s).
	CancelGrace time.Duration
	// Clock and NewID are the engine's time and ID source (default: the wall clock
	// and monotonic ULIDs).
	Clock func() time.Time
	NewID func() string

	log sessionLog // the open log, set by Open
}
