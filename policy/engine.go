package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Decision is what the policy says about a call.
type Decision string

const (
	Allow           Decision = "allow"
	RequireApproval Decision = "require_approval"
	Deny            Decision = "deny"
)

// Stricter says whether decision a is stricter than b (deny, then require_approval,
// then allow).
func Stricter(a, b Decision) bool { return strictness(a) > strictness(b) }

// strictness orders decisions: the strictest match wins.
func strictness(d Decision) int {
	switch d {
	case Deny:
		return 2
	case RequireApproval:
		return 1
	}
	return 0
}

// Mode is a sandbox mode; it gives the decision where no rule matches.
type Mode string

const (
	ModeReadOnly         Mode = "read-only"
	ModeWorkspaceWrite   Mode = "workspace-write"
	ModeNetworkOff       Mode = "network-off"
	ModeNetworkAllowlist Mode = "network-allowlist"
	ModeFullIsolated     Mode = "full-isolated"
)

// Modes lists every mode.
var Modes = []Mode{ModeReadOnly, ModeWorkspaceWrite, ModeNetworkOff, ModeNetworkAllowlist, ModeFullIsolated}

// Subject is who calls: the agent, the skill it acts under (if any) and the tool.
type Subject struct {
	Agent, Skill, Tool string
}

// Rule is one policy rule: when the subject, an action and (if given) a resource
// match, it decides. Empty lists match anything.
type Rule struct {
	Name     string
	Decision Decision
	Agents   []string
	Skills   []string
	Tools    []string
	Actions  []Action
	Paths    []string // doublestar globs over workspace-relative paths (or absolute ones)
	Commands []string // argv prefixes, word by word; a word "*" matches any one word
	Domains  []string // host globs
	MaxLevel *Level   // matches only commands at or below this risk
	// Alternative is what the model or a reviewer is told to try instead.
	Alternative string
}

// Engine decides calls for one app.
type Engine struct {
	Mode      Mode
	Rules     []Rule
	Workspace string // absolute; paths are resolved against it
	// Mechanism names how the sandbox confines commands (landlock when empty); the
	// policy does not use it, it travels with the mode to whoever builds the sandbox.
	Mechanism string
	// Network is how commands reach the network ("" : what the mode implies; see
	// EffectiveNetwork).
	Network Network
	// GitWrites lets commands write the workspace's repositories (commit, branch);
	// the sandbox keeps git's config, hooks and pointers read-only even then.
	GitWrites bool
}

// Verdict is a decision with its reasons.
type Verdict struct {
	Decision    Decision  `json:"decision"`
	Level       Level     `json:"level"`
	Rule        string    `json:"rule"` // the rule that fired, or "default:<mode>:<level>", or a built-in reason
	Reason      string    `json:"reason"`
	Alternative string    `json:"alternative,omitempty"`
	Class       Class     `json:"class,omitempty"`    // for one command: how much the policy reads of it
	Commands    []Verdict `json:"commands,omitempty"` // for a shell command: each command found
	Argv        []string  `json:"argv,omitempty"`
	Via         []string  `json:"via,omitempty"`
	// Resources are what the call acts on (for a shell command: all its commands').
	Resources []Resource `json:"resources,omitempty"`
}

// defaultDenied are paths no rule can open, at any depth — secrets, keys, the
// credential stores of the tools people use, repository internals. One list
// serves the policy, the file tools and the sandbox's masks (see DeniedBy).
var defaultDenied = []string{
	"**/.env*", "**/*.pem", "**/*.key",
	"**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*", // ssh keys (id_generator.go is a file like any other)
	"**/.ssh/**", "**/.gnupg/**", "**/.password-store/**", "**/.local/share/keyrings/**",
	"**/.git/config", "**/.git/hooks/**", "**/.git/modules/**/config",
	"**/.git-credentials", "**/.config/git/credentials", "**/.netrc", "**/_netrc",
	"**/.aws/credentials", "**/.aws/sso/cache/**", "**/.aws/cli/cache/**",
	"**/.config/gcloud/**", "**/.azure/**",
	"**/.docker/config.json", "**/.config/containers/auth.json", "**/.kube/config",
	"**/.config/gh/hosts.yml", "**/.config/hub", "**/.pgpass",
	"**/.terraform.d/credentials.tfrc.json", "**/.cargo/credentials", "**/.cargo/credentials.toml", "**/.gem/credentials",
	"**/.vault-token", "**/.config/rclone/rclone.conf", "**/.s3cfg", "**/.boto",
	"**/.composer/auth.json", "**/.config/composer/auth.json", "**/.m2/settings-security.xml",
}

// DefaultDenied are the paths no rule can open (see defaultDenied); files that
// are denied only when they hold credentials are CredentialFiles.
func DefaultDenied() []string { return slices.Clone(defaultDenied) }

// Shell decides a bash call.
func (e *Engine) Shell(sub Subject, command string) Verdict {
	script := ParseScript(command)
	if len(script.Commands) == 0 {
		return Verdict{Decision: Allow, Level: L0, Rule: "empty", Reason: "the command runs nothing"}
	}
	out := Verdict{Decision: Allow}
	for _, c := range script.Commands {
		v := e.command(sub, c, true)
		v.Argv, v.Via = c.Argv, c.Via
		out.Commands = append(out.Commands, v)
		out.Resources = append(out.Resources, c.Resources...)
		out.Level = max(out.Level, v.Level)
		if strictness(v.Decision) > strictness(out.Decision) || out.Rule == "" {
			out.Decision, out.Rule, out.Reason, out.Alternative = v.Decision, v.Rule, v.Reason, v.Alternative
		}
	}
	return out
}

// Tool decides a call of a tool that is not a shell: its action on its resources.
func (e *Engine) Tool(sub Subject, level Level, actions []Action, res []Resource) Verdict {
	return e.command(sub, Command{Argv: []string{sub.Tool}, Level: level, Actions: actions, Resources: res}, false)
}

// command decides one command; sandboxed says it runs in the sandbox, whose /tmp
// and devices are its own.
func (e *Engine) command(sub Subject, c Command, sandboxed bool) Verdict {
	v := Verdict{Level: c.Level, Class: c.Class, Resources: c.Resources}
	for _, r := range c.Resources {
		if r.Path == "" {
			continue
		}
		if sandboxed && sandboxOwn(r.Path) {
			continue
		}
		if why := e.forbidden(r.Path, listers[c.Name()] && r.Action == ActRead); why != "" {
			v.Decision, v.Rule, v.Reason = Deny, "default-deny", fmt.Sprintf("%s %s %s: %s", c.Name(), r.Action, r.Path, why)
			v.Alternative = "leave it alone: secrets and paths outside the workspace are never opened; if the task needs one, tell the user"
			return v
		}
	}
	var best *Rule
	for i := range e.Rules {
		r := &e.Rules[i]
		if !r.matches(e, sub, c) {
			continue
		}
		if best == nil || strictness(r.Decision) > strictness(best.Decision) {
			best = r
		}
	}
	if best != nil {
		v.Decision, v.Rule, v.Alternative = best.Decision, best.Name, best.Alternative
		v.Reason = fmt.Sprintf("rule %s: %s %s", best.Name, best.Decision, strings.Join(c.Argv, " "))
		if best.Decision == Allow && len(best.Domains) > 0 && c.Class == ClassOpaque && e.modeDefault(Command{Class: ClassOpaque}) != Allow {
			// A rule that opens hosts opens the network, not the code a command runs.
			v.Decision = RequireApproval
			v.Reason += fmt.Sprintf("; rule %s opens its hosts, not what the policy cannot read (%s), which %s asks about", best.Name, opaqueWhy(c), e.EffectiveMode())
		}
	} else {
		v.Decision = e.modeDefault(c)
		v.Rule = fmt.Sprintf("default:%s:%s", e.EffectiveMode(), c.Level)
		v.Reason = fmt.Sprintf("no rule matches %s; %s gives %s at %s", c.Name(), e.EffectiveMode(), v.Decision, c.Level)
		if c.Class == ClassOpaque {
			v.Rule = fmt.Sprintf("default:%s:opaque", e.EffectiveMode())
			v.Reason = fmt.Sprintf("no rule matches %s; %s gives %s to what the policy cannot read (%s)", c.Name(), e.EffectiveMode(), v.Decision, opaqueWhy(c))
		}
	}
	if v.Decision == RequireApproval && slices.Contains(c.Actions, ActNetwork) {
		v.Reason += "; " + e.NetworkGrant(sub)
	}
	if v.Decision == Deny && v.Alternative == "" && best == nil {
		v.Alternative = e.modeAlternative(c)
	}
	return v
}

// modeAlternative is what the model is told to do instead of a command the mode
// denies, by what it would have done.
func (e *Engine) modeAlternative(c Command) string {
	switch {
	case c.Level >= L5:
		return "system changes are never made here; tell the user what the system needs"
	case slices.Contains(c.Actions, ActNetwork):
		return "commands have no network in " + string(e.EffectiveMode()) + " mode; work with what the workspace holds, or tell the user what must be fetched"
	case e.EffectiveMode() == ModeReadOnly:
		return "this session may only read the workspace; say what you would change instead of changing it"
	}
	return "tell the user what you need"
}

// EffectiveMode is the engine's mode, workspace-write when none is set.
func (e *Engine) EffectiveMode() Mode {
	if e.Mode == "" {
		return ModeWorkspaceWrite
	}
	return e.Mode
}

// modeDefault is a mode's decision for a command no rule matches: known-safe is
// allowed; known effects are decided by their level; opaque is let run where the
// sandbox has no network and the workspace can be written (what it does stays there,
// and the undo log takes it back), asked elsewhere — and never decided more loosely
// than the effects the policy does read of it.
func (e *Engine) modeDefault(c Command) Decision {
	d := e.levelDefault(c)
	switch c.Class {
	case ClassKnownSafe:
		return Allow
	case ClassOpaque:
		if e.EffectiveMode() == ModeReadOnly || e.EffectiveNetwork() != NetworkOff {
			if strictness(RequireApproval) > strictness(d) {
				d = RequireApproval
			}
		}
	}
	return d
}

// opaqueWhy says why the policy cannot read c.
func opaqueWhy(c Command) string {
	switch {
	case c.Opaque != "":
		return c.Opaque
	case c.RunsCode:
		return "it runs code given to it, or a setting changes what runs"
	case c.program:
		return "it runs code of its own: a build, a test runner, a script"
	}
	return "a program it does not know"
}

// levelDefault is a mode's decision for a command's known effects: its level, its
// actions.
func (e *Engine) levelDefault(c Command) Decision {
	network := slices.Contains(c.Actions, ActNetwork)
	writes := slices.Contains(c.Actions, ActWrite) || slices.Contains(c.Actions, ActDelete)
	switch {
	case c.Level >= L5:
		return Deny
	case network && (e.EffectiveMode() == ModeNetworkOff || e.EffectiveMode() == ModeFullIsolated || e.EffectiveMode() == ModeReadOnly):
		return Deny
	case e.EffectiveMode() == ModeReadOnly && writes:
		return Deny
	case e.EffectiveMode() == ModeReadOnly && c.Level >= L2:
		return RequireApproval
	case c.Level >= L3:
		return RequireApproval
	}
	return Allow
}

// forbidden says why a path may never be touched: outside the workspace, or on the
// default-deny list (for a glob, any name it may expand to, unless listing: it is
// only listed).
func (e *Engine) forbidden(p string, listing bool) string {
	rel, ok := e.relative(p)
	if !ok {
		return "outside the workspace"
	}
	if pat := DeniedBy(rel); pat != "" {
		return fmt.Sprintf("denied by default (%s)", pat)
	}
	if listing {
		return "" // names and sizes: what a glob expands to is listed, not read
	}
	if pat := GlobMayDeny(rel); pat != "" {
		return fmt.Sprintf("a glob that can expand to a file denied by default (%s)", pat)
	}
	return ""
}

// sandboxOwn says whether a path is a sandboxed command's own, not the host's: its
// private /tmp (a tmpfs of its own, gone with it) and the harmless devices. A secret's
// name there is still refused.
func sandboxOwn(p string) bool {
	clean := filepath.Clean(p)
	switch clean {
	case "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/tmp":
		return true
	}
	return strings.HasPrefix(clean, "/tmp/") && DeniedBy(strings.TrimPrefix(clean, "/tmp/")) == "" && GlobMayDeny(strings.TrimPrefix(clean, "/tmp/")) == ""
}

// listers read what their paths name — names, sizes, modes — not what files hold:
// ls * lists a secret's name (a path named outright is still checked).
var listers = map[string]bool{"ls": true, "du": true, "tree": true, "stat": true}

// relative resolves p against the workspace lexically (the sandbox resolves symlinks
// again when it opens the file) and says whether it stays inside.
func (e *Engine) relative(p string) (string, bool) {
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, "~") {
		return "", false
	}
	ws := e.Workspace
	if ws == "" {
		ws = "/workspace"
	}
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(ws, p)
	}
	rel, err := filepath.Rel(ws, filepath.Clean(abs))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

func (r *Rule) matches(e *Engine, sub Subject, c Command) bool {
	if !anyOf(r.Agents, sub.Agent) || !anyOf(r.Skills, sub.Skill) || !anyOf(r.Tools, sub.Tool) {
		return false
	}
	if r.MaxLevel != nil && c.Level > *r.MaxLevel {
		return false
	}
	if len(r.Actions) > 0 && !slices.ContainsFunc(r.Actions, func(a Action) bool { return slices.Contains(c.Actions, a) }) {
		return false
	}
	if len(r.Paths) == 0 && len(r.Commands) == 0 && len(r.Domains) == 0 {
		return true
	}
	for _, pat := range r.Commands {
		if argvPrefix(strings.Fields(pat), c.Argv) {
			return true
		}
	}
	if r.Decision == Allow && len(r.Domains) > 0 && !everyDomain(r.Domains, c.Resources) {
		return false // an allow rule opens a command only when it covers every host it names
	}
	for _, res := range c.Resources {
		if res.Path != "" {
			rel, ok := e.relative(res.Path)
			for _, pat := range r.Paths {
				if m, _ := doublestar.Match(pat, rel); ok && m {
					return true
				}
				if m, _ := doublestar.Match(pat, res.Path); m {
					return true
				}
			}
		}
		for _, pat := range r.Domains {
			if domainMatches(pat, res.Domain) {
				return true
			}
		}
	}
	return false
}

// everyDomain says whether the patterns cover every host the resources name.
func everyDomain(patterns []string, res []Resource) bool {
	for _, r := range res {
		if r.Domain == "" {
			continue
		}
		if !slices.ContainsFunc(patterns, func(p string) bool { return domainMatches(p, r.Domain) }) {
			return false
		}
	}
	return true
}

func anyOf(set []string, v string) bool { return len(set) == 0 || slices.Contains(set, v) }

// argvPrefix matches a command's words against a pattern's, word by word; the
// command's name is compared without its directory.
func argvPrefix(pat, argv []string) bool {
	if len(pat) == 0 || len(argv) < len(pat) {
		return false
	}
	for i, p := range pat {
		w := argv[i]
		if i == 0 {
			w = filepath.Base(w)
		}
		if p != "*" && p != w {
			return false
		}
	}
	return true
}
