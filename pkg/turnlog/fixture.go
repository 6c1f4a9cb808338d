package turnlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/skills"
)

// A fixture is a folder a recorded session replays from anywhere: events.jsonl (the
// recording), agent.yaml (its app's config, without secrets or webhooks) and
// tools.json (the tools as the recording knew them: the snapshot), with the skill
// folders its agents read.

// Fixture file names.
const (
	FixtureEvents = "events.jsonl"
	FixtureConfig = "agent.yaml"
	FixtureTools  = "tools.json"
)

// FixtureExport says what WriteFixture wrote, and how the fixture replays.
type FixtureExport struct {
	Events int
	Tools  int
	// Skills are the skill folders copied beside agent.yaml; Outside are those that
	// lie outside the config's folder, named as written: a replay reads them there.
	Skills, Outside []string
	// Replay is the replay of the written fixture (nil when it diverged: ReplayErr).
	Replay    *fsm.ReplayReport
	ReplayErr error
}

// WriteFixture writes recorded (a session's recording, fsm.Recording) as a fixture in
// dir, which must not exist or be empty: the app's config as opts names it, without
// its secrets (header values, values given to MCP servers, user information and query
// values of URLs) and webhooks; tool schemas as the apps build them now (MCP servers are
// connected to list theirs); the skill folders. Then it replays the fixture as
// ReplayFixture would, and says how that went: a divergence means the config or the
// code changed since the recording.
func WriteFixture(ctx context.Context, opts Options, recorded []events.Event, dir string) (out *FixtureExport, err error) {
	if len(recorded) == 0 {
		return nil, errors.New("the recording holds no events")
	}
	sc, err := events.DecodeAs[*events.SessionCreated](recorded[0])
	if err != nil {
		return nil, fmt.Errorf("the recording must start with SessionCreated: %w", err)
	}
	created, err := emptyDir(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && created { // nothing half-written stays behind
			os.RemoveAll(dir)
		}
	}()
	src, base, err := opts.configSource()
	if err != nil {
		return nil, err
	}
	loadOpts := opts
	loadOpts.IgnoreWebhooks = true
	apps, err := LoadApps(ctx, loadOpts)
	if err != nil {
		return nil, err
	}
	snapshot, err := apps.Snapshot(sc.App)
	apps.Close()
	if err != nil {
		return nil, err
	}
	cfg, skillDirs, err := exportConfig(src, base, sc.App)
	if err != nil {
		return nil, err
	}
	out = &FixtureExport{Events: len(recorded), Tools: len(snapshot)}
	for _, sd := range skillDirs {
		if filepath.IsAbs(sd) || sd == ".." || strings.HasPrefix(filepath.Clean(sd), "../") {
			out.Outside = append(out.Outside, sd)
			continue
		}
		if err := copySkills(filepath.Join(base, sd), filepath.Join(dir, sd)); err != nil {
			return nil, fmt.Errorf("copy skills %s: %w", sd, err)
		}
		out.Skills = append(out.Skills, sd)
	}
	tools, err := json.MarshalIndent(snapshot, "", "  ")
	if err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, FixtureEvents))
	if err != nil {
		return nil, err
	}
	if err := events.WriteJSONL(f, recorded); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{FixtureConfig: cfg, FixtureTools: append(tools, '\n')} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	replayOpts := Options{Functions: opts.Functions, StateDir: opts.StateDir}
	out.Replay, out.ReplayErr = ReplayFixture(ctx, replayOpts, dir)
	return out, nil
}

// ReplayFixture replays the fixture in dir on a throwaway store with an engine that
// acts on nothing (Options.ReplayOnly): no model is called, no tool runs, no MCP
// server starts, no secret is read; tools.json, when there, gives the tools this
// program cannot build. opts gives the program's Go functions (its Config, DB and
// Snapshot are the fixture's).
func ReplayFixture(ctx context.Context, opts Options, dir string) (*fsm.ReplayReport, error) {
	f, err := os.Open(filepath.Join(dir, FixtureEvents))
	if err != nil {
		return nil, fmt.Errorf("read fixture: %w", err)
	}
	recorded, err := events.ReadJSONL(f, filepath.Join(dir, FixtureEvents))
	f.Close()
	if err != nil {
		return nil, err
	}
	snapshot, err := ReadSnapshot(filepath.Join(dir, FixtureTools))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "turnlog-replay-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	opts.Config, opts.ConfigData, opts.Snapshot = filepath.Join(dir, FixtureConfig), nil, snapshot
	opts.DB, opts.Synchronous, opts.ReplayOnly, opts.IgnoreWebhooks = filepath.Join(tmp, "replay.db"), "OFF", true, true
	opts.Logger, opts.OTLPEndpoint = zerolog.Logger{}, ""
	tl, err := Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer tl.Close()
	return tl.Engine.Replay(ctx, recorded)
}

// configSource is the config's bytes and the folder its relative paths start from.
func (o Options) configSource() ([]byte, string, error) {
	if o.ConfigData != nil {
		return o.ConfigData, filepath.Dir(o.Config), nil
	}
	if o.Config == "" {
		return nil, "", errors.New("no config: set Options.Config to agent.yaml's path (or ConfigData to its content)")
	}
	data, err := os.ReadFile(o.Config)
	if err != nil {
		return nil, "", fmt.Errorf("read config: %w", err)
	}
	return data, filepath.Dir(o.Config), nil
}

// removed stands for a secret an exported config leaves out.
const removed = "[removed]"

// exportConfig is the config of app alone, ready to travel: the guardrail policy
// kept; webhooks dropped; header values, NAME=VALUE given to MCP servers and
// credentials in base URLs removed; schema files inlined (base is the folder
// relative paths start from). It returns the skill folders the agents name.
func exportConfig(src []byte, base, app string) ([]byte, []string, error) {
	var doc yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(src, &doc, yaml.UseOrderedMap()); err != nil {
		return nil, nil, err
	}
	apps, _ := get(doc, "apps").(yaml.MapSlice)
	one, ok := get(apps, app).(yaml.MapSlice)
	if !ok {
		return nil, nil, fmt.Errorf("the config has no app %q", app)
	}
	one = without(one, "webhooks")
	var skills []string
	for _, llm := range entries(get(one, "llms")) {
		scrubURL(llm, "base_url")
	}
	for _, tool := range entries(get(one, "tools")) {
		scrubURL(tool, "url")
		scrubArgs(*tool)
		for _, it := range *tool {
			if headers, ok := it.Value.(yaml.MapSlice); ok && it.Key == "headers" {
				for i := range headers {
					headers[i].Value = removed
				}
			}
		}
		if p, ok := get(*tool, "parameters").(string); ok {
			inline, err := schemaFile(base, p)
			if err != nil {
				return nil, nil, err
			}
			set(tool, "parameters", inline)
		}
	}
	if mcp, ok := get(one, "mcp").(yaml.MapSlice); ok {
		for _, server := range entries(get(mcp, "servers")) {
			scrubURL(server, "url")
			scrubArgs(*server)
			if env, ok := get(*server, "env").([]any); ok {
				for i, v := range env {
					if s, ok := v.(string); ok && strings.Contains(s, "=") {
						name, _, _ := strings.Cut(s, "=")
						env[i] = name + "=" + removed
					}
				}
			}
		}
	}
	for _, agent := range entries(get(one, "agents")) {
		if mem, ok := get(*agent, "memory").(yaml.MapSlice); ok {
			if emb, ok := get(mem, "embeddings").(yaml.MapSlice); ok {
				scrubURL(&emb, "base_url")
			}
		}
		if list, ok := get(*agent, "skills").([]any); ok {
			for _, s := range list {
				if str, ok := s.(string); ok {
					skills = append(skills, str)
				}
			}
		}
	}
	out := yaml.MapSlice{{Key: "apps", Value: yaml.MapSlice{{Key: app, Value: one}}}}
	if gp := get(doc, "guardrail_policy"); gp != nil {
		out = append(out, yaml.MapItem{Key: "guardrail_policy", Value: gp})
	}
	data, err := yaml.MarshalWithOptions(out, yaml.IndentSequence(true), yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		return nil, nil, err
	}
	header := fmt.Sprintf("# App %s as a recorded session ran it, exported by turnlog export --fixture: secrets\n# and webhooks are left out; tools.json holds the tools as the recording knew them.\n", app)
	return append([]byte(header), data...), skills, nil
}

// schemaFile reads a tool's schema file (relative to base) to inline it.
func schemaFile(base, p string) (any, error) {
	path := p
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("a tool's schema file: %w", err)
	}
	var v yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(raw, &v, yaml.UseOrderedMap()); err != nil {
		return nil, fmt.Errorf("the schema file %s: %w", p, err)
	}
	return v, nil
}

// scrubURL keeps of a mapping's URL its scheme and host: a path, a query, a fragment
// or user information may hold a credential (a bot token, a hook's secret path).
func scrubURL(m *yaml.MapSlice, key string) {
	raw, ok := get(*m, key).(string)
	if !ok {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		set(m, key, removed)
		return
	}
	kept := url.URL{Scheme: u.Scheme, Host: u.Host}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		kept.Path = "/" + removed
	}
	set(m, key, kept.String())
}

// scrubArgs keeps of a program's command its name: its arguments may hold a key.
func scrubArgs(m yaml.MapSlice) {
	if argv, ok := get(m, "command").([]any); ok {
		for i := 1; i < len(argv); i++ {
			argv[i] = removed
		}
	}
}

func get(m yaml.MapSlice, key string) any {
	for _, it := range m {
		if k, ok := it.Key.(string); ok && k == key {
			return it.Value
		}
	}
	return nil
}

// set changes the value of a key m has, every time it holds it (in place, so the
// document sees it).
func set(m *yaml.MapSlice, key string, v any) {
	for i, it := range *m {
		if k, ok := it.Key.(string); ok && k == key {
			(*m)[i].Value = v
		}
	}
}

func without(m yaml.MapSlice, key string) yaml.MapSlice {
	out := make(yaml.MapSlice, 0, len(m))
	for _, it := range m {
		if k, ok := it.Key.(string); !ok || k != key {
			out = append(out, it)
		}
	}
	return out
}

// entries are the mappings a mapping of names holds. A MapSlice shares its items
// with the document, so a change to an existing key (set) changes the document. YAML
// merge keys (<<) arrive resolved: a merged key is a key of the mapping like any
// other, and one given twice is changed wherever it stands.
func entries(v any) []*yaml.MapSlice {
	m, ok := v.(yaml.MapSlice)
	if !ok {
		return nil
	}
	var out []*yaml.MapSlice
	for i := range m {
		if e, ok := m[i].Value.(yaml.MapSlice); ok {
			out = append(out, &e)
		}
	}
	return out
}

// emptyDir makes dir (created true), or checks that it is empty.
func emptyDir(dir string) (created bool, err error) {
	list, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true, os.MkdirAll(dir, 0o755)
	case err != nil:
		return false, err
	case len(list) > 0:
		return false, events.FieldError(events.CodeInvalid, "fixture", "%s is not empty: a fixture is written into a new folder", dir)
	}
	return false, nil
}

// copySkills copies the skills of a skills folder: each <name>/SKILL.md, which is all
// turnlog reads of a skill (nothing else of the folder travels).
func copySkills(from, to string) error {
	list, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range list {
		if !e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name(), skills.File))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(to, e.Name()), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name(), skills.File), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
