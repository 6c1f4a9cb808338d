package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

func cmdServe(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "serve", &f, true)
	addr := fs.String("addr", envOr("TURNLOG_ADDR", "127.0.0.1:8080"), "listen address (env TURNLOG_ADDR)")
	dev := fs.Bool("dev", envOr("TURNLOG_DEV", "") == "1" || envOr("TURNLOG_DEV", "") == "true", "development mode: no API keys needed (env TURNLOG_DEV=1)")
	keySpec := fs.String("api-keys", envOr("TURNLOG_API_KEYS", ""), "comma-separated KEY=USER pairs; KEY=USER:admin gives the key the admin role (env TURNLOG_API_KEYS)")
	publicURL := fs.String("public-url", envOr("TURNLOG_PUBLIC_URL", ""), "where people reach this server (behind a TLS proxy, its https URL: the inspector's cookie is then Secure) (env TURNLOG_PUBLIC_URL)")
	keysFile := fs.String("api-keys-file", envOr("TURNLOG_API_KEYS_FILE", ""), "a file of KEY=USER (or KEY=USER:admin) lines (# comments), so keys need not be on a command line (env TURNLOG_API_KEYS_FILE)")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "on SIGTERM, how long running turns get to end before they are canceled with the reason \"shutdown\"")
	fs.StringVar(&f.otlpEndpoint, "otlp-endpoint", envOr("TURNLOG_OTLP_ENDPOINT", envOr("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", envOr("OTEL_EXPORTER_OTLP_ENDPOINT", ""))),
		"send OpenTelemetry spans of turns, model calls and tool calls to this OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318 (env TURNLOG_OTLP_ENDPOINT, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT)")
	walPages := fs.String("wal-autocheckpoint", envOr("TURNLOG_WAL_AUTOCHECKPOINT", "1000"), "checkpoint the WAL once it holds this many pages; 0 leaves checkpoints to a replication tool such as Litestream (env TURNLOG_WAL_AUTOCHECKPOINT)")
	leaseTTL := fs.Duration("lease-ttl", fsm.DefaultLeaseTTL, "on a PostgreSQL database: how long a session's lease lasts unrenewed, so how soon other nodes take over the turns of a node that went away (env TURNLOG_LEASE_TTL)")
	if v := envOr("TURNLOG_LEASE_TTL", ""); v != "" {
		if err := fs.Set("lease-ttl", v); err != nil {
			return events.FieldError(events.CodeInvalid, "TURNLOG_LEASE_TTL", "must be a duration such as 15s, got %q", v)
		}
	}
	cacheSessions := fs.Int("cache-sessions", 1024, "how many sessions' conversations stay in memory between turns, the least recently used evicted past it (env TURNLOG_CACHE_SESSIONS)")
	if v := envOr("TURNLOG_CACHE_SESSIONS", ""); v != "" {
		if err := fs.Set("cache-sessions", v); err != nil {
			return events.FieldError(events.CodeInvalid, "TURNLOG_CACHE_SESSIONS", "must be a number of sessions, got %q", v)
		}
	}
	limits := requestLimitFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := limits.check(); err != nil {
		return err
	}
	if *cacheSessions < 1 {
		return events.FieldError(events.CodeInvalid, "cache-sessions", "must be at least 1, got %d", *cacheSessions)
	}
	f.cacheSessions = *cacheSessions
	if *leaseTTL < 300*time.Millisecond {
		return events.FieldError(events.CodeInvalid, "lease-ttl", "must be a duration of at least 300ms such as 15s, got %s", *leaseTTL)
	}
	f.leaseTTL = *leaseTTL
	if *grace <= 0 {
		return events.FieldError(events.CodeInvalid, "shutdown-grace", "must be a positive duration such as 30s, got %s", *grace)
	}
	if err := requireArgs(fs, 0, "no arguments"); err != nil {
		return err
	}
	switch n, err := strconv.Atoi(*walPages); {
	case err != nil || n < 0:
		return events.FieldError(events.CodeInvalid, "wal-autocheckpoint", "must be a number of pages (0: none of turnlog's own), got %q", *walPages)
	case n == 0:
		f.checkpointPages = -1
	default:
		f.checkpointPages = n
	}
	if u, err := url.Parse(*publicURL); *publicURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return events.FieldError(events.CodeInvalid, "public-url", "must be an http or https URL, got %q", *publicURL)
	}
	keys, admins, err := parseKeys(*keySpec)
	if err != nil {
		return err
	}
	if *keysFile != "" {
		raw, err := os.ReadFile(*keysFile)
		if err != nil {
			return events.Errorf(events.CodeInvalid, "--api-keys-file: %v", err)
		}
		var lines []string
		for _, l := range strings.Split(string(raw), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		fileKeys, fileAdmins, err := parseKeys(strings.Join(lines, ","))
		if err != nil {
			return fmt.Errorf("--api-keys-file %s: %w", *keysFile, err)
		}
		for k, u := range fileKeys {
			keys[k], admins[k] = u, fileAdmins[k]
		}
		c.protected = append(c.protected, *keysFile)
	}
	if len(keys) == 0 && !*dev {
		return events.Errorf(events.CodeInvalid, "no API keys configured: set --api-keys KEY=USER (or TURNLOG_API_KEYS), or pass --dev to serve without keys")
	}
	// What the server's connections, the sandbox's commands and their proxies may
	// hold at once must fit the descriptor limit, with room for the store.
	if err := sandbox.CheckDescriptors(limits.conns.Descriptors()); err != nil {
		return err
	}
	// Listening first tells the sandbox which address its commands must never reach.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	defer ln.Close()
	c.neverDial = append([]string{ln.Addr().String()}, databaseAddrs(f.db)...)
	c.logger = serveLogger(c.stderr)
	tl, err := c.open(ctx, f)
	if err != nil {
		return err
	}
	defer tl.Close()
	// While it serves a SQLite file, turnlog resume beside it refuses (lockServed).
	if release, held, err := lockServed(f.db); err == nil && held {
		defer release()
	}
	if err := checkHostNetwork(c, tl.Apps(), *dev); err != nil {
		return err
	}
	if err := recoverTurns(ctx, c, tl.Engine); err != nil {
		return err
	}
	go warnCommittedSecrets(ctx, tl, func(line string) { c.logger.Warn().Msg(line) })
	if *dev {
		fmt.Fprintln(c.stderr, "turnlog: WARNING: --dev mode: requests need no API key and act as user \"dev\"; do not expose this server")
	}
	fmt.Fprintf(c.stderr, "turnlog: serving on http://%s (database %s)\n", ln.Addr(), shownDB(f.db))
	fmt.Fprintf(c.stderr, "turnlog: the inspector is at http://%s/ui/\n", ln.Addr())
	if err := tl.Serve(ctx, ln, turnlog.ServeOptions{Keys: keys, AdminKeys: admins, Dev: *dev, Logger: c.logger, PublicURL: *publicURL,
		ShutdownGrace: *grace, BodyLimit: limits.body, Limits: &limits.json, Conns: &limits.conns}); err != nil {
		return err
	}
	fmt.Fprintln(c.stderr, "turnlog: stopped")
	return nil
}

// checkHostNetwork warns of every app whose commands get the machine's network, and
// refuses to serve one with --dev: a command could then answer its own approvals
// through the API, which needs no key.
func checkHostNetwork(c *cliContext, apps []*fsm.App, dev bool) error {
	for _, a := range apps {
		if a.ToolPolicy == nil || a.ToolPolicy.EffectiveNetwork() != policy.NetworkHost {
			continue
		}
		if dev {
			return events.Errorf(events.CodeInvalid, "app %s: policy.network: host gives commands the machine's network, where --dev's API needs no key; refused together with --dev", a.Name)
		}
		fmt.Fprintf(c.stderr, "turnlog: WARNING: app %s: policy.network: host — commands reach the machine's network, loopback included\n", a.Name)
	}
	return nil
}

// parseKeys reads KEY=USER pairs; KEY=USER:admin gives the key the admin role.
func parseKeys(spec string) (keys map[string]string, admins map[string]bool, err error) {
	keys, admins = map[string]string{}, map[string]bool{}
	for _, pair := range strings.Split(spec, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		key, user, ok := strings.Cut(pair, "=")
		if !ok || key == "" || user == "" {
			return nil, nil, events.FieldError(events.CodeInvalid, "api-keys", "expected KEY=USER pairs, got %q", pair)
		}
		user, role, hasRole := strings.Cut(user, ":")
		if hasRole && role != "admin" {
			return nil, nil, events.FieldError(events.CodeInvalid, "api-keys", "unknown role %q for user %s (the one role is admin: KEY=USER:admin)", role, user)
		}
		if user == "" {
			return nil, nil, events.FieldError(events.CodeInvalid, "api-keys", "expected KEY=USER pairs, got %q", pair)
		}
		if user == fsm.ExpiredBy {
			return nil, nil, events.FieldError(events.CodeInvalid, "api-keys", "the user name %q is turnlog's own (it answers approvals that expired)", user)
		}
		keys[key], admins[key] = user, hasRole
	}
	return keys, admins, nil
}

// serveLogger is serve's log: JSON lines (zerolog), or readable text when stderr is
// a terminal.
func serveLogger(stderr io.Writer) zerolog.Logger {
	if f, ok := stderr.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return zerolog.New(zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.RFC3339}).With().Timestamp().Logger()
		}
	}
	return zerolog.New(stderr).With().Timestamp().Logger()
}
