package policy

import (
	"bufio"
	_ "embed"
	"slices"
	"strings"
)

// Class is how much the policy knows of what a command does — the trust model.
type Class string

const (
	// ClassKnownSafe: a program (and subcommand, and options) on the known-safe list
	// (knownsafe.tsv): it reads and runs nothing else. Never asked.
	ClassKnownSafe Class = "known-safe"
	// ClassKnownEffects: a program whose effects the policy reads — writes,
	// deletions, network, publishing, system changes — decided by the mode and the
	// rules at its level.
	ClassKnownEffects Class = "known-effects"
	// ClassOpaque: code the policy cannot read — an unknown program, a script, an
	// interpreter given code, a build or test runner, a setting that changes what
	// runs, a name or a command known only when it runs. Let run where the sandbox has no network (what it does
	// stays in the workspace, and the undo log takes it back), asked where it could
	// reach the network or may write nothing.
	ClassOpaque Class = "opaque"
)

//go:embed knownsafe.tsv
var knownSafeTSV string

// safeEntry is one line of the known-safe list: what makes the program unsafe.
type safeEntry struct {
	unsafe   []string
	operands bool // any operand makes it unsafe
}

// knownSafe is the known-safe list by "program" or "program subcommand".
var knownSafe = readKnownSafe(knownSafeTSV)

func readKnownSafe(src string) map[string]safeEntry {
	out := map[string]safeEntry{}
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 3 || cols[0] == "" || cols[2] == "" {
			panic("knownsafe.tsv: want three tab-separated columns: " + line)
		}
		var e safeEntry
		for _, o := range strings.Fields(cols[1]) {
			switch o {
			case "-":
			case "OPERANDS":
				e.operands = true
			default:
				e.unsafe = append(e.unsafe, o)
			}
		}
		out[cols[0]] = e
	}
	return out
}

// classOf is a command's class: opaque where the policy cannot read it, known-safe
// where its program, subcommand and options are on the list and it reads only, else
// known effects.
func classOf(c *Command) Class {
	switch {
	case c.Opaque != "" || c.RunsCode:
		return ClassOpaque
	case !c.program:
		return ClassOpaque // a program the policy does not know
	case slices.Contains(c.Actions, ActExecute):
		return ClassOpaque // it runs code of its own: a build, a test runner, make
	}
	listed, safe := safeArgs(c.Argv, c.readOpts)
	switch {
	case c.Level > L1 || !readsOnly(c.Actions):
		return ClassKnownEffects // a write, a deletion, the network: read as such
	case listed && safe:
		return ClassKnownSafe
	case listed:
		return ClassOpaque // an option its entry names unsafe, whose effect is not read
	}
	return ClassKnownEffects
}

func readsOnly(acts []Action) bool {
	for _, a := range acts {
		if a != ActRead {
			return false
		}
	}
	return true
}

// safeArgs says whether argv's program (or its subcommand) is on the known-safe list,
// and whether none of its arguments makes it unsafe.
func safeArgs(argv []string, readOpts []string) (listed, safe bool) {
	if len(argv) == 0 {
		return false, false
	}
	name := Command{Argv: argv}.Name()
	args := argv[1:]
	entry, ok := knownSafe[name]
	if sub, at := subcommandOf(name, args); sub != "" {
		if e, found := knownSafe[name+" "+sub]; found {
			entry, ok, args = e, true, args[at+1:]
		} else if name == "git" || name == "go" {
			return false, false // a subcommand of theirs not on the list
		}
	} else if name == "git" || name == "go" {
		return false, false
	}
	if !ok {
		return false, false
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if entry.operands {
				return true, false
			}
			continue
		}
		if slices.ContainsFunc(readOpts, func(o string) bool { return a == o || strings.HasPrefix(a, o+"=") }) {
			continue // its effect is read elsewhere
		}
		for _, u := range entry.unsafe {
			if optionIs(a, u) || len(u) == 2 && u[0] == '-' && !strings.HasPrefix(a, "--") && strings.ContainsRune(a[1:], rune(u[1])) {
				return true, false
			}
		}
	}
	return true, true
}

// subcommandOf is a program's subcommand and its index in args: git's after its
// global options, go's its first operand; "" for other programs.
func subcommandOf(name string, args []string) (string, int) {
	switch name {
	case "git":
		return gitSubcommand(args)
	case "go":
		for i, a := range args {
			if !strings.HasPrefix(a, "-") {
				return a, i
			}
		}
	}
	return "", -1
}
