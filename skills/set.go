package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Set is an agent's skills, by name.
type Set struct {
	skills []*Skill
	byName map[string]*Skill
}

// Load reads every skill under roots: each folder of a root that holds a SKILL.md is
// a skill. Two skills with one name, or a malformed SKILL.md, stop the load with the
// files named.
func Load(roots []string) (*Set, error) { return LoadFrom("", roots) }

// LoadFrom is Load with relative roots read from base (the configuration's folder)
// and shown as written.
func LoadFrom(base string, roots []string) (*Set, error) {
	s := &Set{byName: map[string]*Skill{}}
	for _, shown := range roots {
		root := shown
		if base != "" && !filepath.IsAbs(root) {
			root = filepath.Join(base, root)
		}
		entries, err := os.ReadDir(root)
		if err != nil {
			return nil, fmt.Errorf("skills root %s: %w", root, err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			file := filepath.Join(root, e.Name(), File)
			data, err := os.ReadFile(file)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("skill %s: %w", file, err)
			}
			sk, err := Parse(file, data)
			if err != nil {
				return nil, err
			}
			if prev, ok := s.byName[sk.Name]; ok {
				return nil, &Error{File: file, Msg: fmt.Sprintf("skill name %q is taken by %s", sk.Name, filepath.Join(prev.Dir, File))}
			}
			sk.Shown = filepath.Join(shown, e.Name())
			sk.References, sk.Scripts = listFiles(sk.Dir, "references"), listFiles(sk.Dir, "scripts")
			s.skills = append(s.skills, sk)
			s.byName[sk.Name] = sk
		}
	}
	sort.Slice(s.skills, func(i, j int) bool { return s.skills[i].Name < s.skills[j].Name })
	return s, nil
}

// Len is how many skills the set holds.
func (s *Set) Len() int { return len(s.skills) }

// Get returns a skill by name.
func (s *Set) Get(name string) (*Skill, bool) {
	sk, ok := s.byName[name]
	return sk, ok
}

// Names lists the skills' names, sorted.
func (s *Set) Names() []string {
	out := make([]string, len(s.skills))
	for i, sk := range s.skills {
		out[i] = sk.Name
	}
	return out
}

// Index is what enters the agent's instructions: one line per skill with its name,
// description, triggers and folder — never a body.
func (s *Set) Index() string {
	var b strings.Builder
	b.WriteString("Skills you can load with the load_skill tool when one applies (only this index is loaded now):")
	for _, sk := range s.skills {
		fmt.Fprintf(&b, "\n- %s: %s", sk.Name, oneLine(sk.Description))
		if len(sk.Triggers) > 0 {
			fmt.Fprintf(&b, " [when: %s]", strings.Join(sk.Triggers, "; "))
		}
		fmt.Fprintf(&b, " (%s)", sk.Shown)
	}
	return b.String()
}

// Document is what load_skill gives the model: the body, then the skill's files.
func (sk *Skill) Document() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Skill %s\n\n%s", sk.Name, sk.Body)
	if len(sk.References) > 0 || len(sk.Scripts) > 0 {
		fmt.Fprintf(&b, "\n\nFiles of this skill (in %s; read references with read_file, run scripts with bash):", sk.Shown)
		for _, f := range append(append([]string{}, sk.References...), sk.Scripts...) {
			b.WriteString("\n- " + f)
		}
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
