package policy

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Resource is something a command acts on.
type Resource struct {
	Action Action `json:"action"`
	Path   string `json:"path,omitempty"`   // as written, resolved against the workspace by the engine
	Domain string `json:"domain,omitempty"` // a host it connects to
}

// Command is one command found in a shell script, as the policy sees it: its words
// after quote removal, the wrappers and shells it was found through, its class, its
// risk and what it acts on.
type Command struct {
	Argv      []string   `json:"argv"`
	Via       []string   `json:"via,omitempty"`
	Class     Class      `json:"class"`
	Level     Level      `json:"level"`
	Actions   []Action   `json:"actions,omitempty"`
	Resources []Resource `json:"resources,omitempty"`
	// Opaque, when set, says what of the command the policy cannot read (a name, a
	// script, a command a wrapper runs, known only when it runs): it is opaque.
	Opaque string `json:"opaque,omitempty"`
	// RunsCode: the command runs code the policy cannot read (given inline, on stdin,
	// or through a setting that changes what runs): it is opaque.
	RunsCode bool `json:"runs_code,omitempty"`
	// program says the policy knows the command's program (or it is a function of
	// the script, a redirection, a wrapper of a command classified on its own).
	program bool
	// readOpts are options the known-safe list names unsafe whose effect the policy
	// reads elsewhere (find -exec's command, rg --pre's program: classified on their
	// own), so they do not make the command opaque.
	readOpts []string
}

// Name is the command's name without its directory.
func (c Command) Name() string {
	if len(c.Argv) == 0 {
		return ""
	}
	return path.Base(c.Argv[0])
}

// Script is what parsing a shell script found.
type Script struct {
	Commands []Command `json:"commands"`
	// Opaque says why the script cannot be read at all (a parse error): it is one
	// opaque command.
	Opaque string `json:"opaque,omitempty"`
	// stdin is what the command being classified reads on its standard input when a
	// here-document or here-string gives it: its text, and whether it is literal.
	stdin *input
	// aliases are the script's aliases with literal values, by name.
	aliases map[string]string
}

// input is a command's standard input from a here-document or a here-string.
type input struct {
	text    string
	literal bool
}

// ParseScript finds every command of a shell script — in pipelines, lists, $(...),
// backticks, process substitution, subshells, brace groups, function bodies, and
// strings run by sh -c — and classifies each.
func ParseScript(src string) Script {
	var s Script
	s.parse(src, nil, 0)
	if s.Opaque != "" {
		s.Commands = append(s.Commands, Command{Argv: []string{"bash", "-c", src}, Level: L2, Actions: []Action{ActExecute}, Opaque: s.Opaque})
	}
	for i := range s.Commands {
		s.Commands[i].Class = classOf(&s.Commands[i])
	}
	return s
}

func (s *Script) parse(src string, via []string, depth int) {
	if depth > 4 {
		s.Opaque = "shell strings nested too deep to read"
		return
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		s.Opaque = fmt.Sprintf("the command does not parse: %v", err)
		return
	}
	funcs := map[string]bool{}
	dirs := trackDirs(file)
	stdins := hereInputs(file)
	if s.aliases == nil {
		s.aliases = map[string]string{}
	}
	syntax.Walk(file, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 1 {
			if name, ok := staticWord(c.Args[0]); ok && name == "alias" {
				for _, w := range c.Args[1:] {
					if v, ok := staticWord(w); ok {
						if k, val, ok := strings.Cut(v, "="); ok {
							s.aliases[k] = val
						}
					}
				}
			}
		}
		return true
	})
	arith := false
	syntax.Walk(file, func(n syntax.Node) bool {
		if f, ok := n.(*syntax.FuncDecl); ok {
			funcs[f.Name.Value] = true
		}
		return true
	})
	syntax.Walk(file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			for _, a := range n.Assigns {
				s.assignment(a, via)
			}
			if len(n.Args) > 0 {
				from := len(s.Commands)
				s.stdin = stdins[n]
				s.call(n.Args, via, funcs, depth)
				s.stdin = nil
				s.rebase(from, dirs[n]) // cd before it moved it: dirs.go
			}
		case *syntax.Redirect:
			from := len(s.Commands)
			s.redirect(n, via)
			s.rebase(from, dirs[n])
		case *syntax.DeclClause: // export, declare, local, readonly, typeset
			for _, a := range n.Args {
				s.assignment(a, via)
			}
		case *syntax.ParamExp:
			if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil && strings.Contains(n.Exp.Word.Lit(), "P") {
				// ${x@P} expands x as a prompt: the command substitutions in its value run.
				s.Commands = append(s.Commands, Command{Argv: []string{"${…@P}"}, Via: via, Level: L2, Actions: []Action{ActExecute}, RunsCode: true})
			}
			if n.Index != nil && !arith && namesVariable(n.Index) {
				arith = true // ${a[x]}: the subscript is arithmetic on x's value
				s.Commands = append(s.Commands, Command{Argv: []string{"${…[…]}"}, Via: via, Level: L2, Actions: []Action{ActExecute}, RunsCode: true})
			}
		case *syntax.BinaryTest:
			switch n.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLss, syntax.TsGtr, syntax.TsLeq, syntax.TsGeq:
				if !arith && (namesVariable(n.X) || namesVariable(n.Y)) {
					arith = true // [[ $x -eq 0 ]]: both sides are arithmetic on the values
					s.Commands = append(s.Commands, Command{Argv: []string{"[[ … -eq … ]]"}, Via: via, Level: L2, Actions: []Action{ActExecute}, RunsCode: true})
				}
			}
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			if !arith && namesVariable(n) {
				// bash evaluates a variable's value as an expression, and an array
				// subscript in it runs command substitutions: x='a[$(rm -rf x)]'; $((x)).
				arith = true
				s.Commands = append(s.Commands, Command{Argv: []string{"$((…))"}, Via: via, Level: L2, Actions: []Action{ActExecute}, RunsCode: true})
			}
		}
		return true
	})
}

// hereInputs are the here-documents and here-strings simple commands read: the last
// one a statement redirects to its standard input.
func hereInputs(f *syntax.File) map[*syntax.CallExpr]*input {
	out := map[*syntax.CallExpr]*input{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if b, ok := n.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
			// echo 'rm -rf x' | sh: what a literal echo or printf writes is read too.
			if to, ok := b.Y.Cmd.(*syntax.CallExpr); ok {
				if text, ok := echoed(b.X); ok {
					out[to] = &input{text: text, literal: true}
				}
			}
			return true
		}
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		call, ok := st.Cmd.(*syntax.CallExpr)
		if !ok {
			return true
		}
		for _, r := range st.Redirs {
			if r.N != nil && r.N.Value != "0" {
				continue
			}
			switch r.Op {
			case syntax.WordHdoc:
				text, lit := staticWord(r.Word)
				out[call] = &input{text: text, literal: lit}
			case syntax.Hdoc, syntax.DashHdoc:
				text, lit := staticWord(r.Hdoc)
				if r.Hdoc == nil {
					text, lit = "", true
				}
				out[call] = &input{text: text, literal: lit}
			}
		}
		return true
	})
	return out
}

// echoed is what a statement that is a plain echo (or a printf of one literal format
// without directives) of literal words writes.
func echoed(st *syntax.Stmt) (string, bool) {
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(c.Args) < 2 || len(st.Redirs) > 0 {
		return "", false
	}
	words := make([]string, len(c.Args))
	for i, w := range c.Args {
		v, ok := staticWord(w)
		if !ok {
			return "", false
		}
		words[i] = v
	}
	switch words[0] {
	case "echo":
		if strings.HasPrefix(words[1], "-") {
			return "", false // -e, -n: escapes or no newline
		}
		return strings.Join(words[1:], " "), true
	case "printf":
		if len(words) == 2 && !strings.ContainsAny(words[1], "%\\") {
			return words[1], true
		}
	}
	return "", false
}

// namesVariable says whether an arithmetic expression reads a variable.
func namesVariable(n syntax.Node) bool {
	found := false
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.ParamExp:
			found = true
		case *syntax.Word:
			if lit := m.Lit(); lit != "" && (lit[0] == '_' || lit[0] >= 'A' && lit[0] <= 'Z' || lit[0] >= 'a' && lit[0] <= 'z') {
				found = true
			}
		}
		return !found
	})
	return found
}

// redirect records the file a redirection reads or writes.
func (s *Script) redirect(r *syntax.Redirect, via []string) {
	var act Action
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.AppClob:
		act = ActWrite
	case syntax.RdrInOut:
		act = ActWrite // <> opens it for writing too
	case syntax.RdrIn:
		act = ActRead
	case syntax.DplOut, syntax.DplIn:
		if t, ok := staticWord(r.Word); ok && (t == "-" || strings.Trim(t, "0123456789") == "") {
			return // fd duplication or closing: no file
		}
		act = ActWrite // >&FILE is &>FILE
		if r.Op == syntax.DplIn {
			act = ActRead
		}
	default:
		return // here-documents and here-strings name no file
	}
	target, ok := staticWord(r.Word)
	if ok && (target == "/dev/null" || target == "/dev/stdout" || target == "/dev/stderr") {
		return // output thrown away or passed on: nothing written
	}
	cmd := Command{Argv: []string{r.Op.String(), target}, Via: via, Level: L1, Actions: []Action{act}, program: true}
	if act == ActWrite {
		cmd.Level = L2
	}
	switch {
	case !ok:
		// A file named only when it runs: a read or a write of the workspace, decided
		// as such (the sandbox keeps it inside).
	default:
		cmd.Resources = []Resource{{Action: act, Path: target}}
	}
	s.Commands = append(s.Commands, cmd)
}

// maxBraceWords is the most words a brace expansion of one argument is read into;
// past it the argument counts as known only when it runs.
const maxBraceWords = 256

// call classifies one simple command.
func (s *Script) call(words []*syntax.Word, via []string, funcs map[string]bool, depth int) {
	words = expandBraces(words)
	argv := make([]string, len(words))
	dynamic := make([]bool, len(words))
	for i, w := range words {
		var static bool
		argv[i], static = staticWord(w)
		if dynamic[i] = !static; dynamic[i] {
			argv[i] = source(w) // shown as written; never used as a name or a path
		}
	}
	if dynamic[0] {
		s.Commands = append(s.Commands, Command{Argv: argv, Via: via, Level: L2, Actions: []Action{ActExecute}, Opaque: "the command's name is only known when it runs"})
		return
	}
	s.classify(argv, dynamic, via, funcs, depth, L0)
	if named, ok := braceName(words[0]); ok {
		// {rm,-rf,x}: the name's brace expansion is the command's first words.
		s.classify(append(named, argv[1:]...), append(make([]bool, len(named)), dynamic[1:]...), via, funcs, depth, L0)
	}
	if value, ok := s.aliases[argv[0]]; ok && !slices.Contains(dynamic, true) {
		// An alias of the script (where the shell expands them): its value is what runs.
		rest := make([]string, 0, len(argv))
		for _, a := range argv[1:] {
			q, err := syntax.Quote(a, syntax.LangBash)
			if err != nil {
				return
			}
			rest = append(rest, q)
		}
		delete(s.aliases, argv[0]) // bash does not expand an alias within its own value
		s.parse(strings.TrimSpace(value+" "+strings.Join(rest, " ")), append(append([]string(nil), via...), "alias "+argv[0]), depth+1)
		s.aliases[argv[0]] = value
	}
}

// braceName is a command name's brace expansion when it is literal and makes more
// than one word, or holds no brace at all.
func braceName(w *syntax.Word) ([]string, bool) {
	c := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
	if !syntax.SplitBraces(c) {
		return nil, false
	}
	var out []string
	for e, err := range expand.BracesSeq(nil, c) {
		if err != nil || len(out) == maxBraceWords {
			return nil, false
		}
		v, ok := staticWord(e)
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	return out, len(out) > 0
}

// expandBraces is words with each argument's brace expansion made (cat {.env,a}
// reads .env and a); the command's name is left as written (plainName refuses it).
// An expansion of more than maxBraceWords words is left whole, known only when it
// runs.
func expandBraces(words []*syntax.Word) []*syntax.Word {
	out := words[:1:1]
	for _, w := range words[1:] {
		c := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
		if !syntax.SplitBraces(c) {
			out = append(out, w)
			continue
		}
		var got []*syntax.Word
		for e, err := range expand.BracesSeq(nil, c) {
			if err != nil || len(got) == maxBraceWords {
				got = []*syntax.Word{{Parts: []syntax.WordPart{&syntax.ParamExp{Param: &syntax.Lit{Value: "_"}}}}}
				break
			}
			got = append(got, e)
		}
		out = append(out, got...)
	}
	return out
}

func (s *Script) classify(argv []string, dynamic []bool, via []string, funcs map[string]bool, depth int, floor Level) {
	name := path.Base(argv[0])
	cmd := Command{Argv: argv, Via: via}
	opaque := func(why string) {
		cmd.Level, cmd.Actions, cmd.Opaque = max(L2, floor), []Action{ActExecute}, why
		cmd.Resources = append(cmd.Resources, pathOperands(argv[1:], dynamic[1:])...)
		s.Commands = append(s.Commands, cmd)
	}
	if !plainName(argv[0]) {
		opaque("the command's name is not a plain word (a glob or brace expansion decides what runs)")
		return
	}
	if stringRunners[name] && len(argv) > 1 {
		// eval, watch and trap run their (first) arguments as a shell string: a literal
		// one is read as the commands it holds.
		words, dyn := argv[1:], dynamic[1:]
		if name == "watch" {
			n := flagsThen(words, 0, "-n", "--interval", "-d", "--differences", "-q", "--equexit")
			if n < 0 || n >= len(words) {
				opaque("watch's arguments cannot be read")
				return
			}
			words, dyn = words[n:], dyn[n:]
		}
		if name == "trap" {
			if words[0] == "--" && len(words) > 1 {
				words, dyn = words[1:], dyn[1:]
			}
			words, dyn = words[:1], dyn[:1]
		}
		if slices.Contains(dyn, true) {
			opaque(name + " runs a string only known when it runs")
			return
		}
		cmd.Level, cmd.program = floor, true
		s.Commands = append(s.Commands, cmd)
		s.parse(strings.Join(words, " "), append(append([]string(nil), via...), name), depth+1)
		return
	}
	if why, ok := opaquePrograms[name]; ok {
		if why == unknownWrapper && s.heldCommand(argv, dynamic, via, funcs, depth, floor, why) {
			return
		}
		opaque(why)
		return
	}
	if funcs[name] && !strings.Contains(argv[0], "/") && !knownProgram(name) {
		// A function of the script: its body is classified where it is declared. One
		// named as a program is classified as that program too: a function never hides
		// one (`command rm`, a wrapper, or the next line may reach the real one).
		cmd.Level, cmd.program = floor, true
		s.Commands = append(s.Commands, cmd)
		return
	}
	if name == "env" {
		if script, ok := envSplitString(argv[1:], dynamic[1:]); ok {
			// env -S splits its string into the command it runs: read as a script.
			cmd.Level, cmd.program = floor, true
			s.Commands = append(s.Commands, cmd)
			s.parse(script, append(append([]string(nil), via...), "env -S"), depth+1)
			return
		}
	}
	if skip, ok := wrappers[name]; ok {
		floor = max(floor, wrapperLevel[name]) // sudo, runuser: a privilege under whatever they run
		n := skip(argv[1:])
		if n < 0 {
			opaque(fmt.Sprintf("%s's arguments cannot be read", name))
			return
		}
		if 1+n >= len(argv) { // nothing wrapped: the wrapper alone
			cmd.Level, cmd.program = floor, true // xargs alone runs echo
			s.Commands = append(s.Commands, cmd)
			return
		}
		if dynamic[1+n] {
			opaque(fmt.Sprintf("the command %s runs is only known when it runs", name))
			return
		}
		if name == "env" {
			for _, a := range argv[1 : 1+n] {
				if v, _, ok := strings.Cut(a, "="); ok && codeSetting(v) {
					s.Commands = append(s.Commands, Command{Argv: []string{v + "=…"}, Via: via, Level: max(L2, floor), Actions: []Action{ActExecute}, RunsCode: true})
				}
			}
		}
		if repl := xargsReplace(argv[1 : 1+n]); repl != "" {
			argv, dynamic = append([]string(nil), argv...), append([]bool(nil), dynamic...)
			for j := 1 + n; j < len(argv); j++ {
				if !strings.Contains(argv[j], repl) {
					continue
				}
				if j > 1+n && shells[path.Base(argv[1+n])] && !dynamic[j] {
					// What xargs reads becomes text of the shell's script: the script
					// is read with it as a word known only when it runs, and is code
					// only known when it runs too.
					argv[j] = strings.ReplaceAll(argv[j], repl, "$XARGS_ITEM")
					s.Commands = append(s.Commands, Command{Argv: argv[:1+n], Via: via, Level: max(L2, floor), Actions: []Action{ActExecute},
						Opaque: "xargs puts what it reads into the script " + argv[1+n] + " runs"})
					continue
				}
				dynamic[j] = true // what xargs reads decides
			}
		}
		if in := s.stdin; name == "xargs" && in != nil && in.literal && xargsReplace(argv[1:1+n]) == "" {
			// What it reads is written out (echo .env | xargs cat): its words are the
			// command's last arguments.
			words := strings.Fields(in.text)
			argv, dynamic = append(append([]string(nil), argv...), words...), append(append([]bool(nil), dynamic...), make([]bool, len(words))...)
		}
		own := optionPaths(name, argv[1:1+n], dynamic[1:1+n])
		if name == "xargs" {
			for j := 1; j < 1+n; j++ {
				if (argv[j] == "-a" || argv[j] == "--arg-file") && j+1 < 1+n {
					own = append(own, Resource{Action: ActRead, Path: argv[j+1]})
				}
			}
		}
		s.Commands = append(s.Commands, Command{Argv: argv[:1+n], Via: via, Level: floor, Resources: own, program: true})
		// A wrapper runs a program, never a function of the script (command and
		// builtin skip them; env, xargs and the rest exec).
		s.classify(argv[1+n:], dynamic[1+n:], append(append([]string(nil), via...), name), nil, depth, floor)
		return
	}
	if shells[name] {
		s.shell(cmd, argv, dynamic, via, depth, floor)
		return
	}
	if name == "find" {
		s.find(cmd, argv, dynamic, via, funcs, depth, floor)
		return
	}
	ci, known := commands[name]
	if _, listed := knownSafe[name]; !known && listed {
		ci, known = info(L1, argsRead, ActRead), true // a reader of the known-safe list
	}
	if !known {
		ci = info(L2, argsNone, ActExecute) // unknown programs run code of their own
		if s.heldCommand(argv, dynamic, via, funcs, depth, floor, name+" is a program the policy does not know") {
			return
		}
	}
	if ci.args == argsSubcmd {
		ci = subcommand(name, argv)
	}
	cmd.Level, cmd.Actions, cmd.program = max(ci.level, floor), ci.actions, known
	cmd.Resources = resources(name, ci, argv[1:], dynamic[1:])
	if !known || ci.args == argsNone && slices.Contains(ci.actions, ActExecute) {
		// A program whose arguments the policy does not know the roles of (its own, a
		// build, a script) may open any it is given: what looks like a path is one.
		cmd.Resources = append(cmd.Resources, pathOperands(argv[1:], dynamic[1:])...)
	}
	refine(&cmd, argv)
	if name == "git" {
		cmd.Resources = append(cmd.Resources, gitStdinPaths(argv[1:], s.stdin)...)
	}
	for _, r := range cmd.Resources { // a path it writes or deletes, however named, is that action
		switch r.Action {
		case ActWrite:
			cmd.Level, cmd.Actions = max(cmd.Level, L2), appendAction(cmd.Actions, ActWrite)
		case ActDelete:
			cmd.Level, cmd.Actions = max(cmd.Level, L4), appendAction(cmd.Actions, ActDelete)
		}
	}
	if name == "rg" && slices.ContainsFunc(argv[1:], func(a string) bool { return a == "--pre" || strings.HasPrefix(a, "--pre=") }) &&
		!slices.Contains(dynamic, true) {
		cmd.readOpts = []string{"--pre"} // its program is classified (rgPre)
	}
	scripts, paths := codeStrings(name, argv[1:], dynamic[1:])
	cmd.Resources = append(cmd.Resources, paths...)
	s.Commands = append(s.Commands, cmd)
	for _, script := range scripts {
		s.parse(script, append(append([]string(nil), via...), name), depth+1)
	}
	switch name {
	case "git":
		s.gitInner(argv, dynamic, via, depth, floor)
	case "rg":
		s.rgPre(argv, dynamic, via, depth, floor)
	}
}

// gitStdinPaths are the paths a git command reads from its history as its standard
// input names them, when a here-document or here-string writes it out: cat-file's
// --batch objects (REV:PATH a line), and the pathspecs of --stdin and
// --pathspec-from-file=-.
func gitStdinPaths(args []string, in *input) []Resource {
	if in == nil || !in.literal {
		return nil
	}
	sub, at := gitSubcommand(args)
	if at < 0 {
		return nil
	}
	reads := false
	for _, a := range args[at+1:] {
		if strings.HasPrefix(a, "--batch") || a == "--stdin" || a == "--pathspec-from-file=-" {
			reads = true
		}
	}
	if !reads {
		return nil
	}
	var out []Resource
	for _, l := range strings.Split(in.text, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if strings.Contains(l, ":") {
			out = append(out, historyPaths(sub, []string{l})...) // REV:PATH
		} else {
			out = append(out, Resource{Action: ActRead, Path: l})
		}
	}
	return out
}

// rgPre classifies the program ripgrep's --pre runs on every file it searches, with
// the paths it searches as its arguments.
func (s *Script) rgPre(argv []string, dynamic []bool, via []string, depth int, floor Level) {
	pre, preDyn, at := "", false, -1
	for i := 1; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "--pre" && i+1 < len(argv):
			pre, preDyn, at = argv[i+1], dynamic[i+1], i+1
		case strings.HasPrefix(a, "--pre="):
			pre, preDyn, at = strings.TrimPrefix(a, "--pre="), dynamic[i], i
		}
	}
	if at < 0 {
		return
	}
	inner, innerDyn := []string{pre}, []bool{preDyn}
	operands := 0
	for i := 1; i < len(argv); i++ {
		if i == at || i == at-1 && argv[i] == "--pre" || strings.HasPrefix(argv[i], "-") {
			continue
		}
		if operands++; operands > 1 { // the first is the pattern
			inner, innerDyn = append(inner, argv[i]), append(innerDyn, dynamic[i])
		}
	}
	if preDyn {
		s.Commands = append(s.Commands, Command{Argv: inner, Via: via, Level: max(L2, floor), Actions: []Action{ActExecute}, Opaque: "rg --pre runs a program only known when it runs"})
		return
	}
	s.classify(inner, innerDyn, append(append([]string(nil), via...), "rg --pre"), nil, depth, floor)
}

// gitInner classifies the commands git runs for its subcommand: submodule foreach's
// and rebase --exec's shell strings, bisect run's program. One known only when it
// runs cannot be read.
func (s *Script) gitInner(argv []string, dynamic []bool, via []string, depth int, floor Level) {
	sub, at := gitSubcommand(argv[1:])
	if sub == "" {
		return
	}
	rest, restDyn := argv[2+at:], dynamic[2+at:]
	for i := 1; i+1 < 1+at; i++ { // an alias given with -c: what it stands for runs
		if argv[i] == "-c" && !dynamic[i+1] {
			if key, val, ok := strings.Cut(argv[i+1], "="); ok && strings.EqualFold(key, "alias."+sub) && !strings.HasPrefix(val, "!") && depth < 4 {
				words := append([]string{argv[0]}, strings.Fields(val)...)
				s.classify(append(words, rest...), append(make([]bool, len(words)), restDyn...), append(append([]string(nil), via...), "git alias "+sub), nil, depth+1, floor)
			}
		}
	}
	script := func(i int, src string) {
		if restDyn[i] {
			s.Commands = append(s.Commands, Command{Argv: argv, Via: via, Level: max(L2, floor), Actions: []Action{ActExecute}, Opaque: "git runs a command that is only known when it runs"})
			return
		}
		s.parse(src, append(append([]string(nil), via...), "git "+sub), depth+1)
	}
	switch sub {
	case "submodule":
		for i := 0; i < len(rest); i++ {
			if rest[i] != "foreach" {
				continue
			}
			j := i + 1
			for j < len(rest) && strings.HasPrefix(rest[j], "-") {
				j++
			}
			if j < len(rest) {
				if slices.Contains(restDyn[j:], true) {
					script(j+slices.Index(restDyn[j:], true), "")
					return
				}
				script(j, strings.Join(rest[j:], " ")) // git runs the words as one shell string
			}
			return
		}
	case "rebase":
		for i := 0; i < len(rest); i++ {
			a := rest[i]
			long, value, joined := strings.Cut(a, "=")
			switch {
			case len(long) > 3 && strings.HasPrefix("--exec", long): // git takes an abbreviation of a long option
				if joined {
					script(i, value)
				} else if i+1 < len(rest) {
					script(i+1, rest[i+1])
					i++
				}
			case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(a, "x"):
				if k := strings.IndexByte(a, 'x'); k < len(a)-1 {
					script(i, a[k+1:]) // -xCMD
				} else if i+1 < len(rest) {
					script(i+1, rest[i+1]) // -ix CMD
					i++
				}
			}
		}
	case "filter-branch":
		for i := 0; i+1 < len(rest); i++ {
			switch rest[i] {
			case "--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter", "--commit-filter", "--tag-name-filter":
				script(i+1, rest[i+1]) // run for every commit, in a shell
				i++
			}
		}
	case "bisect":
		if len(rest) > 1 && rest[0] == "run" {
			if restDyn[1] {
				script(1, "")
				return
			}
			s.classify(rest[1:], restDyn[1:], append(append([]string(nil), via...), "git bisect run"), nil, depth, floor)
		}
	}
}

// stringRunners run their arguments as a shell string.
var stringRunners = map[string]bool{"eval": true, "watch": true, "trap": true}

// subcommandWords are words that, after an unknown program, are its subcommands
// far more often than a program it runs.
var subcommandWords = map[string]bool{"install": true, "test": true, "run": true, "build": true, "add": true, "update": true,
	"init": true, "list": true, "show": true, "start": true, "help": true, "info": true, "version": true, "link": true}

// heldCommand classifies what an unknown program or wrapper may run: a known command
// among its first few operands, where a wrapper puts its command (mywrap rm -rf x,
// chronic cat .env, dotenv -- cat .env), or the string script's -c runs. The program
// itself is opaque (why). It says whether it found one.
func (s *Script) heldCommand(argv []string, dynamic []bool, via []string, funcs map[string]bool, depth int, floor Level, why string) bool {
	name := path.Base(argv[0])
	if name == "script" {
		for j := 1; j+1 < len(argv); j++ {
			if a := argv[j]; a == "--command" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, "c") {
				s.Commands = append(s.Commands, Command{Argv: argv[:j+1], Via: via, Level: max(L2, floor), Actions: []Action{ActExecute}, Opaque: why})
				if dynamic[j+1] {
					s.Commands = append(s.Commands, Command{Argv: argv[j+1 : j+2], Via: via, Level: max(L2, floor), Actions: []Action{ActExecute}, Opaque: "script runs a string only known when it runs"})
				} else {
					s.parse(argv[j+1], append(append([]string(nil), via...), name), depth+1)
				}
				return true
			}
		}
	}
	for j, seen := 1, 0; j < len(argv) && seen < 3; j++ {
		if dynamic[j] || strings.HasPrefix(argv[j], "-") || argv[j] == "." || argv[j] == ".." {
			continue
		}
		seen++ // the first few operands: where a wrapper's command goes, after its options' values
		inner := path.Base(argv[j])
		if subcommandWords[inner] {
			return false // yarn install, pnpm test: a subcommand of the program, not a program
		}
		if _, safe := knownSafe[inner]; commandLike(inner) || knownProgram(inner) || safe {
			s.Commands = append(s.Commands, Command{Argv: argv[:j], Via: via, Level: max(L2, floor), Actions: []Action{ActExecute}, Opaque: why})
			s.classify(argv[j:], dynamic[j:], append(append([]string(nil), via...), name), funcs, depth, max(L2, floor))
			return true
		}
	}
	return false
}

// commandLike says whether a word names a program the policy knows something of
// that matters when another program runs it: more than reading.
func commandLike(name string) bool {
	if shells[name] {
		return true
	}
	if _, ok := opaquePrograms[name]; ok {
		return true
	}
	if _, ok := wrappers[name]; ok {
		return true
	}
	ci, ok := commands[name]
	return ok && (ci.level >= L3 || ci.args == argsSubcmd || len(ci.actions) > 0 && ci.actions[0] != ActRead && ci.level >= L2)
}

// knownProgram says whether the policy knows name as a program of its own.
func knownProgram(name string) bool {
	_, known := commands[name]
	_, wraps := wrappers[name]
	_, hides := opaquePrograms[name]
	return known || wraps || hides || shells[name]
}

// shell handles sh/bash -c STRING (parsed again); a shell reading its script from a
// file runs code the policy cannot see, and one reading stdin runs whatever arrives.
func (s *Script) shell(cmd Command, argv []string, dynamic []bool, via []string, depth int, floor Level) {
	name := path.Base(argv[0])
	script := false // -c: the first operand is the script
	for i := 1; i < len(argv); i++ {
		if dynamic[i] {
			break
		}
		a := argv[i]
		if a == "--" || a == "-" {
			continue // the end of the options
		}
		if len(a) > 1 && (a[0] == '-' || a[0] == '+') && !strings.HasPrefix(a, "--") {
			script = script || a[0] == '-' && strings.Contains(a, "c")
			for _, o := range a[1:] {
				if o == 'o' || o == 'O' {
					i++ // -o NAME, +O NAME (in a cluster too: -euo pipefail): an option's name, not the script
				}
			}
			continue
		}
		if strings.HasPrefix(a, "--") {
			continue // --norc, --login, …
		}
		if script {
			cmd.Level, cmd.program = floor, true
			s.Commands = append(s.Commands, cmd)
			s.parse(a, append(append([]string(nil), via...), name+" -c"), depth+1)
			return
		}
		cmd.Level, cmd.Actions, cmd.Opaque = max(L2, floor), []Action{ActExecute}, fmt.Sprintf("%s runs the script %s, which the policy does not read", name, a)
		cmd.Resources = append([]Resource{{Action: ActRead, Path: a}}, pathOperands(argv[i+1:], dynamic[i+1:])...)
		s.Commands = append(s.Commands, cmd)
		return
	}
	if in := s.stdin; in != nil && in.literal {
		// Its script is a here-document or here-string written out: read as such.
		s.stdin = nil
		cmd.Level, cmd.program = floor, true
		s.Commands = append(s.Commands, cmd)
		s.parse(in.text, append(append([]string(nil), via...), name+" <<<"), depth+1)
		return
	}
	cmd.Level, cmd.Actions, cmd.Opaque = max(L2, floor), []Action{ActExecute}, fmt.Sprintf("%s runs whatever it reads, which the policy cannot see", name)
	s.Commands = append(s.Commands, cmd)
}

// find reads its roots; -delete deletes under them; -exec and friends run a command
// on what it finds, which is classified with {} standing for the roots.
func (s *Script) find(cmd Command, argv []string, dynamic []bool, via []string, funcs map[string]bool, depth int, floor Level) {
	var roots []string
	i := 1
	for i < len(argv) && (argv[i] == "-H" || argv[i] == "-L" || argv[i] == "-P" || strings.HasPrefix(argv[i], "-O") || argv[i] == "-D") {
		if argv[i] == "-D" {
			i++ // its debug options
		}
		i++ // how it treats links, its optimisation: not an expression
	}
	for ; i < len(argv) && !strings.HasPrefix(argv[i], "-") && argv[i] != "(" && argv[i] != "!"; i++ {
		if dynamic[i] {
			continue // a root named only when it runs: its reads are let through, as any read of one
		}
		roots = append(roots, argv[i])
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	cmd.Level, cmd.Actions, cmd.program = max(L1, floor), []Action{ActRead}, true
	for _, r := range roots {
		cmd.Resources = append(cmd.Resources, Resource{Action: ActRead, Path: r})
	}
	// What -exec gives its command ({}) is what the roots hold that the tests name:
	// a name pattern aimed at a secret (-name '*.pem') makes it that secret.
	found := roots
	for k := i; k+1 < len(argv); k++ {
		if (argv[k] == "-name" || argv[k] == "-iname") && !dynamic[k+1] && GlobMayDeny("x/"+argv[k+1]) != "" || DeniedBy(argv[k+1]) != "" && argv[k] == "-name" {
			found = nil
			for _, r := range roots {
				found = append(found, path.Join(r, argv[k+1]))
			}
			break
		}
	}
	for ; i < len(argv); i++ {
		switch argv[i] {
		case "-files0-from":
			if i+1 < len(argv) {
				cmd.Resources = append(cmd.Resources, Resource{Action: ActRead, Path: argv[i+1]})
				i++
			}
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(argv) {
				cmd.Level, cmd.Actions = max(cmd.Level, L2, floor), append(cmd.Actions, ActWrite)
				cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: argv[i+1]})
				i++
			}
		case "-delete":
			cmd.Level, cmd.Actions = max(L4, floor), append(cmd.Actions, ActDelete)
			for _, r := range roots {
				cmd.Resources = append(cmd.Resources, Resource{Action: ActDelete, Path: r})
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(argv) && argv[j] != ";" && argv[j] != "+" {
				j++
			}
			if j == i+1 || dynamic[i+1] {
				cmd.Level, cmd.Actions, cmd.Opaque = max(L2, floor), append(cmd.Actions, ActExecute), "find runs a command that is only known when it runs"
				s.Commands = append(s.Commands, cmd)
				return
			}
			var inner []string
			var innerDyn []bool
			for k := i + 1; k < j; k++ {
				if argv[k] == "{}" {
					inner, innerDyn = append(inner, found...), append(innerDyn, make([]bool, len(found))...)
					continue
				}
				inner, innerDyn = append(inner, argv[k]), append(innerDyn, dynamic[k])
			}
			s.classify(inner, innerDyn, append(append([]string(nil), via...), "find "+argv[i]), funcs, depth, floor)
			cmd.readOpts = append(cmd.readOpts, argv[i])
			i = j
		}
	}
	s.Commands = append(s.Commands, cmd)
}

// subcommand looks a tool's subcommand up (git -C dir status → git status).
func subcommand(name string, argv []string) commandInfo {
	if name == "git" { // after git's global options, as refineGit reads them
		if sub, _ := gitSubcommand(argv[1:]); sub != "" {
			if ci, ok := subcommands["git "+sub]; ok {
				return ci
			}
		}
		return info(L2, argsNone, ActExecute)
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if strings.HasPrefix(a, "-") {
			if a == "-C" || a == "-c" || a == "--git-dir" || a == "--work-tree" {
				i++
			}
			continue
		}
		if ci, ok := subcommands[name+" "+a]; ok {
			return ci
		}
		break
	}
	return info(L2, argsNone, ActExecute)
}

// resources reads what a command's arguments name, by its argument role. An
// argument known only when the command runs names nothing the policy can check: the
// command's actions and level decide it (the sandbox keeps it in the workspace).
func resources(name string, ci commandInfo, args []string, dynamic []bool) []Resource {
	var operands []string
	var out []Resource
	given := false // the pattern or program came with -e or -f: every operand is a path
	for i := 0; i < len(args); i++ {
		a := args[i]
		if ci.args == argsPattern && !dynamic[i] && (a == "-e" || a == "--expression" || a == "--regexp" || a == "-f" || a == "--file") {
			given = true
			if (a == "-f" || a == "--file") && i+1 < len(args) && !dynamic[i+1] {
				out = append(out, Resource{Action: ActRead, Path: args[i+1]}) // the patterns' or program's file
			}
			i++
			continue
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 && !dynamic[i] {
			if ci.args == argsURL && takesValue(name, a) {
				i++ // the option's value (curl -m 5, -H 'Accept: x'), not an address
			}
			continue
		}
		if dynamic[i] {
			continue
		}
		operands = append(operands, a)
	}
	add := func(act Action, ps ...string) {
		for _, p := range ps {
			out = append(out, Resource{Action: act, Path: p})
		}
	}
	switch ci.args {
	case argsRead:
		add(ActRead, operands...)
	case argsWrite:
		add(ActWrite, operands...)
	case argsDelete:
		add(ActDelete, operands...)
	case argsCopy:
		if len(operands) > 0 {
			add(ActRead, operands[:len(operands)-1]...)
			add(ActWrite, operands[len(operands)-1])
		}
	case argsPattern:
		if given {
			add(ActRead, operands...)
		} else if len(operands) > 1 {
			add(ActRead, operands[1:]...)
		}
	case argsMode:
		if len(operands) > 1 {
			add(ActWrite, operands[1:]...)
		}
	case argsURL:
		for _, o := range operands {
			if f, ok := cutScheme(o, "file://"); ok {
				out = append(out, Resource{Action: ActRead, Path: "/" + strings.TrimLeft(strings.TrimPrefix(f, "localhost"), "/")}) // a local file, by its absolute path
				continue
			}
			out = append(out, Resource{Action: ActNetwork, Domain: host(o)})
		}
	}
	return append(out, optionPaths(name, args, dynamic)...)
}

// envSplitString is the command env -S (--split-string) runs, as a script: its
// literal string, then the arguments after it. ok is false when there is none or it
// is known only when it runs.
func envSplitString(args []string, dynamic []bool) (string, bool) {
	for i, a := range args {
		var v string
		switch {
		case (a == "-S" || a == "--split-string") && i+1 < len(args):
			if dynamic[i+1] {
				return "", false
			}
			v, i = args[i+1], i+1
		case strings.HasPrefix(a, "--split-string="):
			v = strings.TrimPrefix(a, "--split-string=")
		case strings.HasPrefix(a, "-S") && len(a) > 2:
			v = a[2:]
		default:
			if dynamic[i] || !strings.HasPrefix(a, "-") && !containsEq(a) {
				return "", false
			}
			continue
		}
		if dynamic[i] {
			return "", false
		}
		words := []string{v}
		for j := i + 1; j < len(args); j++ {
			if dynamic[j] {
				return "", false
			}
			q, err := syntax.Quote(args[j], syntax.LangBash)
			if err != nil {
				return "", false
			}
			words = append(words, q)
		}
		return strings.Join(words, " "), true
	}
	return "", false
}

// cutScheme is a URL without its scheme when it has this one (case aside).
func cutScheme(u, scheme string) (string, bool) {
	if len(u) >= len(scheme) && strings.EqualFold(u[:len(scheme)], scheme) {
		return u[len(scheme):], true
	}
	return "", false
}

// pathOptions name a file or directory in their value, whatever the program: the
// value is checked like any path (outside the workspace, on the default-deny list).
var pathOptions = map[string]Action{"--directory": ActRead, "--target-directory": ActWrite,
	"--git-dir": ActRead, "--work-tree": ActWrite, "--output": ActWrite, "--to-file": ActRead, "--from-file": ActRead,
	"--file": ActRead, "--append": ActWrite, "--log-file": ActWrite, "--prefix": ActWrite, "--root": ActRead}

// valuedOptions are the options of the programs that connect whose value is the next
// argument: it is no address.
var valuedOptions = map[string][]string{
	"curl": {"-A", "-b", "-c", "-C", "-d", "-D", "-e", "-E", "-F", "-H", "-K", "-m", "-o", "-P", "-Q", "-r", "-T", "-u", "-U", "-w", "-x", "-X", "-y", "-Y", "-z",
		"--max-time", "--connect-timeout", "--retry", "--retry-delay", "--retry-max-time", "--header", "--data", "--data-binary", "--data-raw",
		"--data-urlencode", "--json", "--output", "--user", "--user-agent", "--request", "--write-out", "--cookie", "--cookie-jar", "--form",
		"--proxy", "--preproxy", "--referer", "--upload-file", "--config", "--range", "--limit-rate", "--cacert", "--cert", "--key",
		"--resolve", "--max-redirs", "--speed-time", "--speed-limit", "--interface", "--dns-servers", "--connect-to", "--output-dir"},
	"wget": {"-O", "-o", "-a", "-P", "-t", "-T", "-w", "-U", "-e", "-i", "-B", "-l", "-A", "-R", "-D", "-I", "-X",
		"--output-document", "--output-file", "--append-output", "--directory-prefix", "--tries", "--timeout", "--wait", "--user-agent",
		"--execute", "--input-file", "--header", "--post-data", "--post-file", "--body-data", "--body-file", "--method", "--user", "--password"},
	"ssh":   {"-b", "-c", "-D", "-E", "-e", "-F", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p", "-Q", "-R", "-S", "-W", "-w"},
	"scp":   {"-c", "-F", "-i", "-J", "-l", "-o", "-P", "-S"},
	"sftp":  {"-B", "-b", "-c", "-D", "-F", "-i", "-J", "-l", "-o", "-P", "-R", "-S"},
	"nc":    {"-i", "-p", "-s", "-w", "-x", "-X", "-O", "-I", "-T", "-V"},
	"ncat":  {"-i", "-p", "-s", "-w", "-x", "-c", "-e", "--sh-exec", "--exec"},
	"ping":  {"-c", "-i", "-I", "-s", "-t", "-W", "-w", "-l", "-p", "-Q", "-S", "-M"},
	"rsync": {"-e", "--rsh", "--rsync-path", "--exclude", "--include", "-f", "--filter", "--port", "--password-file", "--bwlimit", "--timeout"},
}

// takesValue says whether the option a of program name takes the next argument as its
// value.
func takesValue(name, a string) bool {
	return !strings.Contains(a, "=") && slices.Contains(valuedOptions[name], a)
}

// shortPathOptions name a path in their value for the programs listed only: -o is an
// output file to sort and a build, a pattern's matches to grep; -t a target
// directory to cp, a separator to sort.
var shortPathOptions = map[string]struct {
	act      Action
	programs []string
}{
	"-o": {ActWrite, []string{"sort", "tree", "curl", "gcc", "cc", "clang", "g++", "c++", "go", "wget", "time", "gofmt", "ld", "as", "objcopy", "pandoc", "shfmt"}},
	"-O": {ActWrite, []string{"wget"}},
	"-P": {ActWrite, []string{"wget"}},
	"-t": {ActWrite, []string{"cp", "mv", "ln", "install"}},
	"-C": {ActRead, []string{"git", "make", "gmake", "tar", "ninja"}},
}

// shortPathOption is the action of the short option o's value for program name.
func shortPathOption(name, o string) (Action, bool) {
	opt, ok := shortPathOptions[o]
	if !ok || !slices.Contains(opt.programs, name) {
		return "", false
	}
	return opt.act, true
}

// notPaths are long options whose values are patterns, never paths read or written:
// --exclude=.env keeps a file out.
var notPaths = []string{"--exclude", "--include", "--exclude-dir", "--include-dir", "--glob", "--iglob", "--ignore", "--exclude-from"}

// optionPaths finds the paths given in options: --opt=PATH for any option whose value
// looks like a path, and the value of the options in pathOptions, joined or not.
func optionPaths(name string, args []string, dynamic []bool) []Resource {
	var out []Resource
	for i, a := range args {
		if dynamic[i] || !strings.HasPrefix(a, "-") {
			continue
		}
		if opt, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") {
			if slices.Contains(notPaths, opt) {
				continue
			}
			act, known := pathOptions[opt]
			if !known {
				act = ActRead
				if n := strings.ToLower(opt); strings.Contains(n, "out") || strings.Contains(n, "target") || strings.Contains(n, "append") ||
					strings.Contains(n, "write") || strings.Contains(n, "dest") || strings.Contains(n, "save") || strings.Contains(n, "log") {
					act = ActWrite
				}
			}
			if known || strings.ContainsAny(v, "/~") || strings.HasPrefix(v, ".") {
				out = append(out, Resource{Action: act, Path: v})
			}
			continue
		}
		if act, ok := pathOptions[a]; ok && i+1 < len(args) && !dynamic[i+1] {
			out = append(out, Resource{Action: act, Path: args[i+1]})
			continue
		}
		if act, ok := shortPathOption(name, a); ok && i+1 < len(args) && !dynamic[i+1] {
			out = append(out, Resource{Action: act, Path: args[i+1]})
			continue
		}
		// A short option with its value joined: -o../x, -C/etc.
		if len(a) > 2 && a[1] != '-' {
			if act, ok := shortPathOption(name, a[:2]); ok && (strings.ContainsAny(a[2:], "/~") || strings.HasPrefix(a[2:], ".")) {
				out = append(out, Resource{Action: act, Path: a[2:]})
			}
		}
	}
	return out
}

// host is the host an address names: a URL's host, user@host, host:port, or itself.
func host(a string) string {
	if i := strings.Index(a, "://"); i >= 0 {
		a = a[i+3:]
	}
	if i := strings.IndexAny(a, "/?#"); i >= 0 {
		a = a[:i]
	}
	if i := strings.LastIndex(a, "@"); i >= 0 {
		a = a[i+1:]
	}
	if i := strings.LastIndex(a, ":"); i >= 0 && !strings.Contains(a[i:], "]") {
		a = a[:i]
	}
	return strings.ToLower(a)
}

// staticWord is a word's value after quote removal, if nothing in it is expanded
// when it runs (no parameters, command substitution, arithmetic or globs of braces).
func staticWord(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(ansiC(p.Value)) // $'…' decodes its escapes: $'\x72m' is rm
				continue
			}
			b.WriteString(p.Value)
		case *syntax.ParamExp:
			at, ok := knownPlace(p)
			if !ok || b.Len() > 0 {
				return b.String(), false
			}
			b.WriteString(at)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					b.WriteString(q.Value)
				case *syntax.ParamExp:
					at, ok := knownPlace(q)
					if !ok || b.Len() > 0 {
						return b.String(), false
					}
					b.WriteString(at)
				default:
					return b.String(), false
				}
			}
		default:
			return b.String(), false
		}
	}
	return b.String(), true
}

// pathOperands are the arguments of a program whose arguments' roles the policy does
// not know that look like paths — a name with a directory in it, a dotfile, ~, or a
// name the default-deny list covers — as reads: what it is given it may open. An
// option's joined value (--file=x) is optionPaths'.
func pathOperands(args []string, dynamic []bool) []Resource {
	var out []Resource
	for i, a := range args {
		if dynamic[i] || a == "" || strings.HasPrefix(a, "-") || strings.Contains(a, "://") || a == "." {
			continue
		}
		if strings.ContainsAny(a, "/") || strings.HasPrefix(a, ".") || strings.HasPrefix(a, "~") || DeniedBy(a) != "" {
			out = append(out, Resource{Action: ActRead, Path: a})
		}
	}
	return out
}

// knownPlace is where a word's leading $HOME or $PWD (plain, or in braces) points:
// the home directory (outside the workspace, as ~ is) or the directory the command
// starts in. Any other expansion is known only when it runs.
func knownPlace(p *syntax.ParamExp) (string, bool) {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil || p.Repl != nil || p.Exp != nil || p.Names != 0 {
		return "", false
	}
	switch p.Param.Value {
	case "HOME":
		return "~", true
	case "PWD":
		return ".", true
	}
	return "", false
}

// ansiC decodes the escapes of a $'…' string as bash does.
func ansiC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case 'x', 'u', 'U':
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			j := i + 1
			for j < len(s) && j <= i+width && strings.IndexByte("0123456789abcdefABCDEF", s[j]) >= 0 {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if c == 'x' {
				b.WriteByte(byte(n))
			} else {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		default:
			if c >= '0' && c <= '7' {
				j := i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
					j++
				}
				n, _ := strconv.ParseUint(s[i:j], 8, 16)
				b.WriteByte(byte(n))
				i = j - 1
				continue
			}
			b.WriteByte(c) // \\ \' \" \? and the rest: the character
		}
	}
	return b.String()
}

// unescape removes the backslashes of an unquoted literal (\rm is rm).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// source prints a word as written.
func source(w *syntax.Word) string {
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, w); err != nil {
		return "?"
	}
	return b.String()
}
