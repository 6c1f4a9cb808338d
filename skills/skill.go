package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// Limits of a skill's front matter.
const (
	MaxName        = 64
	MaxDescription = 1024
	File           = "SKILL.md"
)

// Actions a permission may name (the policy's).
var Actions = []string{"read", "write", "execute", "network", "delete"}

// Permission is one thing a skill needs: an action on a resource (a path glob, a
// command, a domain).
type Permission struct {
	Action   string `json:"action"`
	Resource string `json:"resource"`
}

func (p Permission) String() string { return p.Action + " " + p.Resource }

// Skill is one loaded skill.
type Skill struct {
	Name          string
	Description   string
	Triggers      []string
	RequiredTools []string
	Permissions   []Permission
	Dir           string // the skill's folder, where turnlog reads it
	// Shown is the folder as the configuration names it (its root as written, then
	// the folder): what the index, the loaded text and the log say, the same wherever
	// the configuration is read from.
	Shown      string
	Body       string // SKILL.md after the front matter
	SHA256     string // of SKILL.md
	References []string
	Scripts    []string
}

// Error is a skill that cannot be loaded: the file, the line when known, and why.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

type frontMatter struct {
	Name          string              `yaml:"name"`
	Description   string              `yaml:"description"`
	Triggers      []string            `yaml:"triggers"`
	RequiredTools []string            `yaml:"required_tools"`
	Permissions   []map[string]string `yaml:"permissions"`
}

// Parse reads a SKILL.md. Errors name the file and the line.
func Parse(file string, data []byte) (*Skill, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return nil, &Error{File: file, Line: 1, Msg: "a SKILL.md starts with front matter: a line ---, the YAML, and another ---"}
	}
	end := strings.Index(text[4:], "\n---")
	if end < 0 {
		return nil, &Error{File: file, Line: 1, Msg: "the front matter is never closed by a line ---"}
	}
	// A blank line stands for the opening ---, so YAML's line numbers are the file's.
	yml := "\n" + text[4:4+end+1]
	body := strings.TrimPrefix(text[4+end+4:], "\n")
	var fm frontMatter
	if err := yaml.UnmarshalWithOptions([]byte(yml), &fm, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		msg := yaml.FormatError(err, false, false)
		e := &Error{File: file, Msg: msg}
		if m := yamlPosition.FindStringSubmatch(msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = strings.TrimSpace(msg[len(m[0]):])
		}
		return nil, e
	}
	at := func(path, format string, args ...any) error {
		return &Error{File: file, Line: max(1, lineOf(yml, path)), Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case fm.Name == "":
		return nil, at("name", "name is required")
	case len(fm.Name) > MaxName:
		return nil, at("name", "name is %d characters; at most %d", len(fm.Name), MaxName)
	case strings.ContainsAny(fm.Name, " /\\\n\t"):
		return nil, at("name", "name %q may not hold spaces or slashes", fm.Name)
	case fm.Description == "":
		return nil, at("description", "description is required")
	case len(fm.Description) > MaxDescription:
		return nil, at("description", "description is %d characters; at most %d", len(fm.Description), MaxDescription)
	}
	s := &Skill{Name: fm.Name, Description: strings.TrimSpace(fm.Description), Triggers: fm.Triggers, RequiredTools: fm.RequiredTools,
		Dir: filepath.Dir(file), Body: strings.TrimSpace(body)}
	for i, p := range fm.Permissions {
		here := fmt.Sprintf("permissions[%d]", i)
		if len(p) != 1 {
			return nil, at(here, "a permission is one action and its resource, such as `execute: go test ./...`")
		}
		for action, resource := range p {
			if !slices.Contains(Actions, action) {
				return nil, at(here, "unknown action %q (one of %s)", action, strings.Join(Actions, ", "))
			}
			if strings.TrimSpace(resource) == "" {
				return nil, at(here, "%s needs a resource (a path glob, a command or a domain)", action)
			}
			s.Permissions = append(s.Permissions, Permission{Action: action, Resource: resource})
		}
	}
	sum := sha256.Sum256(data)
	s.SHA256 = hex.EncodeToString(sum[:])
	return s, nil
}

// yamlPosition is the "[line:column]" a YAML error starts with.
var yamlPosition = regexp.MustCompile(`^\[(\d+):\d+\]\s*`)

func lineOf(yml, path string) int {
	p, err := yaml.PathString("$." + path)
	if err != nil {
		return 0
	}
	f, err := parser.ParseBytes([]byte(yml), 0)
	if err != nil {
		return 0
	}
	node, err := p.FilterFile(f)
	if err != nil || node == nil {
		return 0
	}
	return node.GetToken().Position.Line
}

// listFiles lists a skill's files under sub (references/ or scripts/), relative to
// the skill's folder.
func listFiles(dir, sub string) []string {
	var out []string
	filepath.WalkDir(filepath.Join(dir, sub), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}
