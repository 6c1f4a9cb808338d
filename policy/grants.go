package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Grant is a person's yes, for the rest of a session, to the commands a pattern names
// when one agent's call of one tool would ask: Command is an argv prefix, word by word
// (the program and its subcommand: "git push"), Prefix a literal prefix of the
// command's words joined by spaces ("npm run test" covers "npm run test:unit"). For a
// tool that is not a shell, the pattern is the tool's name. A grant only ever turns a
// require_approval into an allow: what the mode, the deny list or a rule denies stays
// denied.
type Grant struct {
	ID      string
	Agent   string
	Tool    string
	Command []string
	Prefix  string
	By      string
}

// Pattern is the grant's pattern as people read it.
func (g Grant) Pattern() string {
	if g.Prefix != "" {
		return g.Prefix + "…"
	}
	return strings.Join(g.Command, " ")
}

// Covers says whether the grant names a command with these words.
func (g Grant) Covers(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	words := append([]string{filepath.Base(argv[0])}, argv[1:]...)
	if g.Prefix != "" {
		return strings.HasPrefix(strings.Join(words, " "), g.Prefix)
	}
	if len(g.Command) == 0 || len(words) < len(g.Command) {
		return false
	}
	for i, w := range g.Command {
		if words[i] != w {
			return false
		}
	}
	return true
}

// CheckGrantPattern refuses a pattern that names nothing or more than words can say:
// an empty one, an empty word, a wildcard.
func CheckGrantPattern(command, prefix string) error {
	switch {
	case command != "" && prefix != "":
		return fmt.Errorf("give command or prefix, not both")
	case prefix != "":
		if strings.TrimSpace(prefix) == "" {
			return fmt.Errorf("prefix is blank")
		}
		return nil
	case strings.TrimSpace(command) == "":
		return fmt.Errorf("names no command")
	}
	for _, w := range strings.Fields(command) {
		if strings.ContainsAny(w, "*?[") {
			return fmt.Errorf("the word %q is a pattern; a grant names literal words", w)
		}
	}
	return nil
}

// Asking lists the argv of each command of a verdict that asks a person (for a tool
// that is not a shell, the tool's name), in order.
func Asking(v Verdict, tool string) [][]string {
	if v.Decision != RequireApproval {
		return nil
	}
	if len(v.Commands) == 0 {
		return [][]string{{tool}}
	}
	var out [][]string
	for _, c := range v.Commands {
		if c.Decision == RequireApproval {
			out = append(out, c.Argv)
		}
	}
	return out
}

// CommandsOf lists the argv of each command of a verdict (for a tool that is not a
// shell, the tool's name), in order.
func CommandsOf(v Verdict, tool string) [][]string {
	if len(v.Commands) == 0 {
		return [][]string{{tool}}
	}
	out := make([][]string, len(v.Commands))
	for i, c := range v.Commands {
		out[i] = c.Argv
	}
	return out
}

// SuggestGrant is the pattern a person is offered for a command that asks: its
// program, and its subcommand when the next word is one (a plain word, not an
// option, a path or a host).
func SuggestGrant(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	out := []string{filepath.Base(argv[0])}
	if len(argv) > 1 {
		w := argv[1]
		if w != "" && !strings.HasPrefix(w, "-") && !strings.ContainsAny(w, "/.:=@$'\"*?[ ") {
			out = append(out, w)
		}
	}
	return out
}

// Granted applies a session's grants to a verdict: when every command that asks is
// covered by a grant of this agent and tool, the call is allowed under the first
// grant's name (rule "grant:<id>", joined by commas when it takes several). It
// returns the verdict unchanged when the call does not ask or a command is left
// uncovered.
func Granted(v Verdict, sub Subject, grants []Grant) (Verdict, []Grant) {
	asking := Asking(v, sub.Tool)
	if len(asking) == 0 || len(grants) == 0 {
		return v, nil
	}
	var used []Grant
	for _, argv := range asking {
		found := false
		for _, g := range grants {
			if g.Agent != sub.Agent || g.Tool != sub.Tool || !g.Covers(argv) {
				continue
			}
			found = true
			if !containsGrant(used, g.ID) {
				used = append(used, g)
			}
			break
		}
		if !found {
			return v, nil
		}
	}
	ids := make([]string, len(used))
	for i, g := range used {
		ids[i] = g.ID
	}
	out := v
	out.Decision, out.Alternative = Allow, ""
	out.Rule = "grant:" + strings.Join(ids, ",")
	out.Reason = fmt.Sprintf("%s: %s allowed %q for the rest of the session", v.Reason, who(used[0].By), used[0].Pattern())
	return out, used
}

func containsGrant(gs []Grant, id string) bool {
	for _, g := range gs {
		if g.ID == id {
			return true
		}
	}
	return false
}

func who(by string) string {
	if by == "" {
		return "a person"
	}
	return by
}

// Fingerprint names what the engine decides by — its mode, network, git writes and
// rules (the domains are in them) — so that a grant given under one policy is known not to hold under
// another: a changed policy (stricter or not) revokes the session's grants, and a
// person is asked again.
func (e *Engine) Fingerprint() string {
	b, err := json.Marshal(struct {
		Mode      Mode
		Network   Network
		GitWrites bool
		Rules     []Rule
	}{e.EffectiveMode(), e.EffectiveNetwork(), e.GitWrites, e.Rules})
	if err != nil {
		return "unprintable"
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:8])
}
