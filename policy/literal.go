package policy

import (
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The policy reads what a command literally does. What it cannot read — code given
// on the command line or on stdin, settings that change what later commands run —
// "runs code" (Command.RunsCode): it is opaque (classes.go).

// plainName says whether a command word, after quote removal, is a name a shell runs
// as written: no glob, no brace expansion ($'…', parameters and arithmetic are not
// static at all).
func plainName(name string) bool {
	if name == "[" {
		return true // test
	}
	if strings.ContainsAny(name, "*?[") {
		return false
	}
	if open := strings.IndexByte(name, '{'); open >= 0 {
		if close := strings.IndexByte(name[open:], '}'); close > 0 {
			inner := name[open+1 : open+close]
			if strings.Contains(inner, ",") || strings.Contains(inner, "..") {
				return false
			}
		}
	}
	return true
}

// codeSettings are variables that change what later commands run, or how: set by a
// command, they run code the policy does not see.
var codeSettings = map[string]bool{"PATH": true, "BASH_ENV": true, "ENV": true, "PS4": true, "PROMPT_COMMAND": true, "IFS": true,
	"CDPATH": true, "SHELLOPTS": true, "BASHOPTS": true, "PERL5OPT": true, "PYTHONSTARTUP": true, "NODE_OPTIONS": true,
	"LESSOPEN": true, "LESSCLOSE": true, "RIPGREP_CONFIG_PATH": true, "TAR_OPTIONS": true, "PAGER": true, "MANPAGER": true,
	"EDITOR": true, "VISUAL": true, "PYTHONPATH": true, "PYTHONHOME": true, "PERL5LIB": true, "RUBYOPT": true, "JAVA_TOOL_OPTIONS": true}

// leadingText is the literal text a word starts with, quotes removed.
func leadingText(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return b.String()
				}
				b.WriteString(lit.Value)
			}
		default:
			return b.String()
		}
	}
	return b.String()
}

// writesWhatItReads adds a write of each path cmd reads: a program that edits its
// files in place (sed -i, gofmt -w).
func writesWhatItReads(cmd *Command) {
	for _, r := range cmd.Resources {
		if r.Action == ActRead {
			cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: r.Path})
		}
	}
}

// optionIs says whether the argument a gives the option f: itself, with =value, a
// short one joined to its value, an unambiguous abbreviation of a long one (getopt's
// --in for --in-place), or a short one spelled long (Go's --w for -w).
func optionIs(a, f string) bool {
	name, _, _ := strings.Cut(a, "=")
	switch {
	case a == f || name == f:
		return true
	case len(f) == 2 && f[0] == '-' && f[1] != '-':
		return strings.HasPrefix(a, f) && !strings.HasPrefix(a, "--") || name == "-"+f
	case strings.HasPrefix(f, "--") && strings.HasPrefix(name, "--") && len(name) > 3:
		return strings.HasPrefix(f, name)
	}
	return false
}

// codeSetting says whether setting the variable name changes what later commands run.
func codeSetting(name string) bool {
	return codeSettings[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "GIT_") || strings.HasPrefix(name, "BASH_FUNC_")
}

// xargsReplace is the string xargs's options (its own, before the command) replace
// with what it reads (-I R, -i, --replace): "" when none.
func xargsReplace(opts []string) string {
	if len(opts) == 0 {
		return ""
	}
	for i, a := range opts {
		switch {
		case a == "-I" && i+1 < len(opts):
			return opts[i+1]
		case strings.HasPrefix(a, "-I") && len(a) > 2:
			return a[2:]
		case a == "-i" || a == "--replace":
			return "{}"
		case strings.HasPrefix(a, "--replace="):
			return strings.TrimPrefix(a, "--replace=")
		case strings.HasPrefix(a, "-i") && len(a) > 2:
			return a[2:]
		}
	}
	return ""
}

// gitSubcommand is git's subcommand in its arguments (after the global options)
// and its index.
func gitSubcommand(args []string) (string, int) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if a == "-C" || a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--config-env" {
				i++
			}
			continue
		}
		return a, i
	}
	return "", -1
}

// assignment classifies a variable assignment (alone, or before a command).
func (s *Script) assignment(a *syntax.Assign, via []string) {
	name := ""
	switch {
	case a.Name != nil:
		name = a.Name.Value
	case a.Value != nil: // declare "PATH=…": the name is the word's first literal text
		name, _, _ = strings.Cut(leadingText(a.Value), "=")
	}
	if codeSetting(name) {
		cmd := Command{Argv: []string{name + "=…"}, Via: via, Level: L2, Actions: []Action{ActExecute}, RunsCode: true}
		if v, ok := staticWord(a.Value); ok && a.Name != nil && pathSettings[name] && v != "" {
			cmd.Resources = []Resource{{Action: ActRead, Path: v}} // where git finds its repository, its config
		}
		s.Commands = append(s.Commands, cmd)
	}
}

// pathSettings are settings whose value is a path the programs that read them open.
var pathSettings = map[string]bool{"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true, "GIT_CONFIG": true,
	"GIT_CONFIG_GLOBAL": true, "GIT_CONFIG_SYSTEM": true, "GIT_OBJECT_DIRECTORY": true, "GIT_COMMON_DIR": true, "BASH_ENV": true, "ENV": true}

// interpreters run code given with these options.
var inlineCode = map[string][]string{
	"python": {"-c"}, "python3": {"-c"}, "python2": {"-c"}, "node": {"-e", "--eval", "-p", "--print"}, "nodejs": {"-e", "--eval", "-p", "--print"},
	"perl": {"-e", "-E"}, "ruby": {"-e"}, "php": {"-r"}, "lua": {"-e"}, "Rscript": {"-e"}, "deno": {"eval"}, "bun": {"-e", "--eval"},
	"vim": {"-c", "--cmd", "-s", "-S"}, "vi": {"-c", "--cmd", "-s", "-S"}, "nvim": {"-c", "--cmd", "-s", "-S"}, "ex": {"-c", "--cmd", "-s", "-S"},
	"emacs": {"--eval", "-l", "--load", "-batch", "--batch"},
}

// awkCode finds what makes an awk program run commands or write files: system(),
// pipes to or from a command, getline, output redirection. It reads the program
// with its strings emptied (awkStringsEmptied): print $1 " -> " $2 redirects nothing.
var awkCode = regexp.MustCompile(`system\s*\(|\|\s*"|"\s*\||getline|>\s*"|print[^;}]*[>|]`)

// awkStringsEmptied is an awk program with each string literal made "".
func awkStringsEmptied(prog string) string {
	var b strings.Builder
	for i := 0; i < len(prog); i++ {
		if prog[i] != '"' {
			b.WriteByte(prog[i])
			continue
		}
		for i++; i < len(prog) && prog[i] != '"'; i++ {
			if prog[i] == '\\' {
				i++
			}
		}
		b.WriteString(`""`)
	}
	return b.String()
}

// sedRunsCode says whether a sed script runs a command (the e command, the s///e
// flag) or writes a file (w, W, the s///w flag).
func sedRunsCode(prog string) bool {
	i := 0
	for i < len(prog) {
		// An address: numbers, $, ranges, steps, negation, /regex/ or \cregexc.
		for i < len(prog) && strings.ContainsRune("0123456789$,~!+ \t", rune(prog[i])) {
			i++
		}
		for i < len(prog) && (prog[i] == '/' || prog[i] == '\\') {
			d := prog[i]
			if d == '\\' && i+1 < len(prog) {
				i++
				d = prog[i]
			}
			i = skipDelimited(prog, i+1, d)
			for i < len(prog) && strings.ContainsRune("0123456789$,~!+ \tIM", rune(prog[i])) {
				i++
			}
		}
		if i >= len(prog) {
			return false
		}
		switch c := prog[i]; c {
		case 'e', 'w', 'W', 'r', 'R':
			return true // runs a command, writes a file, or reads one the policy does not check
		case 's', 'y':
			if i+1 >= len(prog) {
				return false
			}
			d := prog[i+1]
			j := skipDelimited(prog, i+2, d)
			j = skipDelimited(prog, j, d)
			k := j
			for k < len(prog) && prog[k] != ';' && prog[k] != '\n' && prog[k] != '}' {
				k++
			}
			if c == 's' && strings.ContainsAny(prog[j:k], "ew") {
				return true
			}
			i = k
		case '{', '}', ';', '\n', ' ', '\t':
			i++
			continue
		case 'b', 't', 'T', ':':
			// A label, to the end of the line or a ;.
			for i < len(prog) && prog[i] != '\n' && prog[i] != ';' {
				i++
			}
		case 'a', 'i', 'c':
			// The rest of the line is text.
			for i < len(prog) && prog[i] != '\n' {
				i++
			}
		default:
			i++
		}
		for i < len(prog) && prog[i] != ';' && prog[i] != '\n' && prog[i] != '}' && prog[i] != '{' {
			i++
		}
	}
	return false
}

// skipDelimited is where the text starting at i ends past its (unescaped) delimiter d.
func skipDelimited(s string, i int, d byte) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
			continue
		case d:
			return i + 1
		}
		i++
	}
	return i
}

// refine reads what a known program's arguments make it do beyond its table entry:
// code it is given to run, and the arguments that turn a harmless command into a
// deletion, a system change or a connection.
func refine(cmd *Command, argv []string) {
	name := cmd.Name()
	args := argv[1:]
	has := func(flags ...string) bool {
		for _, a := range args {
			for _, f := range flags {
				if optionIs(a, f) {
					return true
				}
			}
		}
		return false
	}
	runsCode := func() {
		cmd.RunsCode = true
		cmd.Actions = appendAction(cmd.Actions, ActExecute)
		cmd.Level = max(cmd.Level, L2)
	}
	if opts, ok := inlineCode[name]; ok && has(opts...) {
		runsCode()
	}
	switch name {
	case "python", "python3", "python2", "node", "perl", "ruby", "php":
		if len(args) == 0 || has("-") {
			runsCode() // a script on stdin
		}
		for i, a := range args {
			if a == "-m" && i+2 < len(args) && (args[i+1] == "pip" || args[i+1] == "pip3") && (args[i+2] == "install" || args[i+2] == "download") {
				cmd.Level, cmd.Actions = max(cmd.Level, L3), appendAction(cmd.Actions, ActNetwork, ActWrite)
			}
		}
	case "awk", "gawk", "mawk", "nawk":
		for i, a := range args {
			if (a == "-f" || a == "--file") && i+1 < len(args) && (args[i+1] == "-" || strings.HasPrefix(args[i+1], "/dev/")) {
				runsCode() // its program on stdin
			}
			if (a == "-i" || a == "--include") && i+1 < len(args) && strings.TrimSuffix(args[i+1], ".awk") == "inplace" ||
				a == "-iinplace" || a == "--include=inplace" {
				writesWhatItReads(cmd) // gawk's in-place extension
			}
		}
		if has("-f") {
			break // a program file of the workspace
		}
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a == "-v" || a == "-F" || a == "--assign" || a == "--field-separator" {
				i++ // a value, not the program
				continue
			}
			if !strings.HasPrefix(a, "-") {
				if awkCode.MatchString(awkStringsEmptied(a)) {
					runsCode()
				}
				break
			}
		}
	case "sed":
		for _, a := range args {
			if optionIs(a, "--in-place") || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a[1:], 'i') {
				writesWhatItReads(cmd) // in place: what it is given, however it is given
				cmd.Level, cmd.Actions = max(cmd.Level, L2), appendAction(cmd.Actions, ActWrite)
				break
			}
		}
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, "--expression="); ok {
				if sedRunsCode(v) {
					runsCode()
				}
				continue
			}
			if (a == "-f" || a == "--file") && i+1 < len(args) && (args[i+1] == "-" || strings.HasPrefix(args[i+1], "/dev/")) {
				runsCode() // its script on stdin
			}
			if a == "-e" || a == "--expression" {
				if i+1 < len(args) && sedRunsCode(args[i+1]) {
					runsCode()
				}
				continue
			}
			if !strings.HasPrefix(a, "-") {
				if sedRunsCode(a) {
					runsCode()
				}
				break
			}
		}
	case "tar":
		for _, a := range args {
			if strings.HasPrefix(a, "--checkpoint-action") || strings.HasPrefix(a, "--to-command") || strings.HasPrefix(a, "--use-compress-program") ||
				strings.HasPrefix(a, "--info-script") || strings.HasPrefix(a, "--new-volume-script") || a == "-I" || a == "-F" {
				runsCode()
			}
		}
		for i, a := range args {
			if i == 0 && !strings.HasPrefix(a, "-") && strings.ContainsAny(a, "ctxru") && strings.Trim(a, "abcdfhijklmnoprstuvwxzACGHJLMOPSTUVWZ") == "" {
				continue // the old form's options: czf
			}
			if !strings.HasPrefix(a, "-") {
				cmd.Resources = append(cmd.Resources, Resource{Action: ActRead, Path: a}) // what it packs, or the archive
			}
		}
	case "make", "gmake":
		for i, a := range args {
			if (a == "-f" || a == "--file" || a == "--makefile") && i+1 < len(args) && (args[i+1] == "-" || strings.HasPrefix(args[i+1], "/dev/")) ||
				a == "-f-" || a == "--file=-" || strings.HasPrefix(a, "--file=/dev/") {
				runsCode()
			}
		}
	case "git":
		refineGit(cmd, args, runsCode)
	case "man":
		if has("-P", "--pager", "-H", "--html", "-p", "--preprocessor") {
			runsCode() // a pager, browser or preprocessor of its choosing
		}
	case "less", "more":
		for _, a := range args {
			if strings.HasPrefix(a, "+") && strings.Contains(a, "!") || a == "--lesskey-src" {
				runsCode()
			}
		}
	case "hash", "alias", "shopt", "enable", "unalias":
		runsCode()
	case "set":
		for _, a := range args {
			if strings.HasPrefix(a, "-") && strings.Contains(a, "x") || a == "xtrace" {
				runsCode()
			}
		}
	case "ssh", "scp", "sftp":
		if name == "scp" {
			cmd.Resources = append(cmd.Resources, scpPaths(args)...)
		}
		for i, a := range args {
			v := strings.TrimPrefix(a, "-o")
			if a == "-o" && i+1 < len(args) {
				v = args[i+1]
			}
			if v != a || a == "-o" {
				if k := strings.ToLower(strings.TrimLeft(v, " ")); strings.HasPrefix(k, "proxycommand") || strings.HasPrefix(k, "localcommand") ||
					strings.HasPrefix(k, "permitlocalcommand") || strings.HasPrefix(k, "knownhostscommand") || strings.HasPrefix(k, "match") {
					runsCode() // a command ssh runs on this machine
				}
			}
			if a == "-F" && i+1 < len(args) {
				cmd.Resources = append(cmd.Resources, Resource{Action: ActRead, Path: args[i+1]})
			}
		}
	case "chmod":
		// A mode that opens a file to others or lets it run as its owner changes more
		// than the workspace: the rest (+x, 644) is a write the undo log takes back.
		if m := firstOperand(args); m != "" && !strings.ContainsAny(m, "st") && !strings.Contains(m, "o+w") && !strings.Contains(m, "a+w") &&
			!(len(m) >= 3 && strings.Trim(m, "01234567") == "" && (len(m) == 4 && m[0] != '0' || m[len(m)-1]&2 != 0)) && !strings.HasPrefix(m, "+w") && !has("-R", "--recursive") {
			cmd.Level = L2
		}
	case "chown", "chgrp":
		if m := firstOperand(args); m == "root" || m == "0" || strings.HasPrefix(m, "root:") || strings.HasPrefix(m, "0:") || strings.HasSuffix(m, ":root") || strings.HasSuffix(m, ":0") {
			cmd.Level = L5 // to the superuser: a system change
		}
	case "unzip":
		cmd.Level, cmd.Actions = max(cmd.Level, L2), appendAction(cmd.Actions, ActWrite) // it writes what it holds
		for i, a := range args {
			if a == "-d" && i+1 < len(args) {
				cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: args[i+1]})
			}
		}
	case "rsync":
		if has("-e", "--rsh", "--rsync-path") {
			runsCode()
		}
		var operands []string
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				operands = append(operands, a)
			}
		}
		if anyContains(operands, ":") { // to or from another machine: what it sends, where it writes
			for k, o := range operands {
				if !strings.Contains(o, ":") {
					act := ActRead
					if k == len(operands)-1 {
						act = ActWrite
					}
					cmd.Resources = append(cmd.Resources, Resource{Action: act, Path: o})
				}
			}
		}
		if len(operands) > 1 && !anyContains(operands, ":") { // a copy on this machine
			if cmd.Level == L3 { // no connection: its own level is a copy's
				cmd.Level = L2
			}
			cmd.Actions, cmd.Resources = []Action{ActRead, ActWrite}, nil
			for _, o := range operands[:len(operands)-1] {
				cmd.Resources = append(cmd.Resources, Resource{Action: ActRead, Path: o})
			}
			cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: operands[len(operands)-1]})
		}
		// Last, over what a copy's actions are: it deletes what the destination has
		// more, or the sources.
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--delete") || a == "--remove-source-files" }) {
			cmd.Level, cmd.Actions = max(cmd.Level, L4), appendAction(cmd.Actions, ActDelete)
		}
	case "uniq", "xxd":
		var operands []string
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case slices.Contains([]string{"-l", "-s", "-c", "-g", "-o", "-f", "-w", "-len", "-seek", "-cols", "-groupsize", "-offset"}, a):
				i++ // its value
			case !strings.HasPrefix(a, "-"):
				operands = append(operands, a)
			}
		}
		if len(operands) > 1 { // the second is the file it writes
			cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: operands[1]})
		}
	case "dd":
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "if="); ok {
				cmd.Resources = append(cmd.Resources, Resource{Action: ActRead, Path: v})
			}
			if v, ok := strings.CutPrefix(a, "of="); ok {
				cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: v})
			}
		}
	case "openssl":
		for i, a := range args {
			if i+1 >= len(args) {
				break
			}
			switch a {
			case "-in", "-inkey", "-key", "-CAfile", "-cert", "-certfile", "-passin", "-kfile":
				cmd.Resources = append(cmd.Resources, Resource{Action: ActRead, Path: strings.TrimPrefix(args[i+1], "file:")})
			case "-out", "-keyout":
				cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: args[i+1]})
			case "-url", "-connect", "-host", "-proxy":
				cmd.Level, cmd.Actions = max(cmd.Level, L3), appendAction(cmd.Actions, ActNetwork)
				cmd.Resources = append(cmd.Resources, Resource{Action: ActNetwork, Domain: host(args[i+1])})
			}
		}
		if len(args) > 0 && (args[0] == "s_client" || args[0] == "s_server" || args[0] == "s_time") {
			cmd.Level, cmd.Actions = max(cmd.Level, L3), appendAction(cmd.Actions, ActNetwork)
		}
	case "date":
		for i, a := range args {
			if (a == "-f" || a == "--file" || a == "-r" || a == "--reference") && i+1 < len(args) {
				cmd.Resources = append(cmd.Resources, Resource{Action: ActRead, Path: args[i+1]})
			}
		}
		if has("-s", "--set") {
			cmd.Level = L5
		}
	case "read", "mapfile", "readarray", "printf":
		for i, a := range args {
			if codeSetting(a) || name == "printf" && a == "-v" && i+1 < len(args) && codeSetting(args[i+1]) {
				runsCode() // it sets a variable that changes what runs
			}
		}
	case "declare", "typeset", "local", "export", "readonly":
		for _, a := range args {
			if n, _, ok := strings.Cut(a, "="); ok && codeSetting(n) {
				runsCode()
			}
		}
	case "gofmt", "goimports":
		if has("-w") {
			writesWhatItReads(cmd)
		}
	case "curl", "wget":
		cmd.Resources = append(cmd.Resources, uploads(args)...)
	case "grep", "egrep", "fgrep", "rg":

		for i, a := range args {
			if (a == "-f" || a == "--file") && i+1 < len(args) {
				cmd.Resources = append(cmd.Resources, Resource{Action: ActRead, Path: args[i+1]})
			}
		}
	case "cd", "pushd":
		if len(args) > 0 && args[len(args)-1] == "-" {
			cmd.Opaque = "cd - goes back to a directory only known when it runs"
		}
	case "unlink":
		cmd.Level, cmd.Actions = max(cmd.Level, L4), appendAction(cmd.Actions, ActDelete)
	case "sysctl":
		if has("-w", "-p", "--write", "--load") || anyContains(args, "=") {
			cmd.Level = L5
		}
	case "ip":
		for _, a := range args {
			switch a {
			case "set", "add", "del", "delete", "change", "replace", "flush", "append", "prepend", "exec":
				cmd.Level = L5
			}
		}
	case "yarn", "pnpm", "bun":
		if len(args) == 0 && name == "yarn" || len(args) > 0 && (args[0] == "install" || args[0] == "i" || args[0] == "add" || args[0] == "dlx" || args[0] == "x") {
			cmd.Level, cmd.Actions = max(cmd.Level, L3), appendAction(cmd.Actions, ActNetwork, ActWrite)
		}
	case "npm":
		if len(args) > 0 && (args[0] == "exec" || args[0] == "x") {
			cmd.Level, cmd.Actions = max(cmd.Level, L3), appendAction(cmd.Actions, ActNetwork, ActExecute)
		}
	case "go":
		if len(args) > 1 && args[0] == "mod" && (args[1] == "edit" || args[1] == "init") {
			cmd.Level, cmd.Actions = L2, []Action{ActWrite} // go.mod on this machine
		}
		if len(args) > 0 && args[0] == "run" && anyContains(args[1:], "@") {
			cmd.Level, cmd.Actions = max(cmd.Level, L3), appendAction(cmd.Actions, ActNetwork)
		}
	case "cargo":
		if len(args) > 0 && args[0] == "install" {
			cmd.Level, cmd.Actions = max(cmd.Level, L3), appendAction(cmd.Actions, ActNetwork, ActWrite)
		}
	}
}

// refineGit reads git's global options (only those before the subcommand: `git
// switch -c` names a branch), the subcommands that delete, connect, or may be
// aliases, and the paths a subcommand reads from the repository's history.
func refineGit(cmd *Command, args []string, runsCode func()) {
	sub, at := gitSubcommand(args)
	globals, rest := args, []string(nil)
	if at >= 0 {
		globals, rest = args[:at], args[at+1:]
	}
	for _, a := range globals {
		if a == "-c" || a == "--config-env" || strings.HasPrefix(a, "--config-env=") || a == "--exec-path" || strings.HasPrefix(a, "--exec-path=") {
			runsCode() // a setting of git's own: a pager, an fsmonitor, an alias
		}
	}
	if gitReadsHistory[sub] {
		cmd.Resources = append(cmd.Resources, historyPaths(sub, rest)...)
	}
	deletes := func() { cmd.Level, cmd.Actions = max(cmd.Level, L4), appendAction(cmd.Actions, ActDelete) }
	for i, a := range rest {
		if (a == "-F" || a == "--file" || a == "-f" && sub == "grep") && i+1 < len(rest) && (sub == "commit" || sub == "tag" || sub == "grep" || sub == "notes") {
			cmd.Resources = append(cmd.Resources, Resource{Action: ActRead, Path: rest[i+1]}) // a message or patterns from a file
		}
	}
	switch sub {
	case "reset":
		if !slices.ContainsFunc(rest, func(a string) bool { return a == "--hard" || a == "--merge" || a == "--keep" }) {
			cmd.Level, cmd.Actions = L2, []Action{ActWrite} // the index and the branch: the reflog keeps them
		}
	case "rm":
		if slices.Contains(rest, "--cached") {
			cmd.Level, cmd.Actions, cmd.Resources = L2, []Action{ActWrite}, nil // the index only
		}
	case "checkout", "restore":
		for _, a := range rest {
			if a == "--" || a == "." || a == "-f" || a == "--force" {
				deletes() // throws away changes
			}
		}
		cmd.Resources = append(cmd.Resources, pathspecs(sub, rest, ActWrite)...)
	case "add", "mv":
		cmd.Resources = append(cmd.Resources, pathspecs(sub, rest, ActRead)...)
	case "filter-branch":
		deletes() // rewrites every commit it walks (its filters are read as the commands they are)
	case "init", "clone":
		var ops []string
		for i := 0; i < len(rest); i++ {
			if strings.HasPrefix(rest[i], "-") {
				if slices.Contains([]string{"-b", "--branch", "-o", "--origin", "--template", "--separate-git-dir", "--reference", "-c", "--config", "--depth", "-u", "--upload-pack", "--object-format", "--initial-branch"}, rest[i]) {
					i++
				}
				continue
			}
			ops = append(ops, rest[i])
		}
		if len(ops) > 0 && (sub == "init" || len(ops) > 1) {
			cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: ops[len(ops)-1]}) // the repository it makes
		}
	case "format-patch", "bundle", "archive":
		for i, a := range rest {
			switch {
			case sub == "archive" && (a == "-o" || a == "--output") && i+1 < len(rest):
				cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: rest[i+1]})
			case sub == "archive" && strings.HasPrefix(a, "--output="):
				cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: strings.TrimPrefix(a, "--output=")})
			case (a == "-o" || a == "--output-directory") && i+1 < len(rest):
				cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: rest[i+1]})
			case sub == "bundle" && a == "create" && i+1 < len(rest):
				cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: rest[i+1]})
			}
		}
		if sub != "archive" || slices.ContainsFunc(cmd.Resources, func(r Resource) bool { return r.Action == ActWrite }) {
			cmd.Level, cmd.Actions = max(cmd.Level, L2), appendAction(cmd.Actions, ActWrite)
		}
	case "config":
		reads := slices.ContainsFunc(rest, func(a string) bool {
			return a == "--get" || a == "--get-all" || a == "--get-regexp" || a == "-l" || a == "--list" || a == "--show-origin" || a == "--get-urlmatch"
		})
		var ops []string
		for i := 0; i < len(rest); i++ {
			if strings.HasPrefix(rest[i], "-") {
				if rest[i] == "-f" || rest[i] == "--file" || rest[i] == "--blob" || rest[i] == "--type" || rest[i] == "--default" {
					i++
				}
				continue
			}
			ops = append(ops, rest[i])
		}
		if !reads && len(ops) == 1 {
			reads = true // git config NAME: a get
		}
		if reads {
			cmd.Level, cmd.Actions = L1, []Action{ActRead} // through the config turnlog gives git
			break
		}
		file := ".git/config" // a setting: it plants what later commands run (hooks, aliases, pagers)
		switch {
		case slices.Contains(rest, "--global"):
			file = "~/.gitconfig"
		case slices.Contains(rest, "--system"):
			file = "/etc/gitconfig"
		}
		for i, a := range rest {
			if (a == "-f" || a == "--file") && i+1 < len(rest) {
				file = rest[i+1]
			} else if f, ok := strings.CutPrefix(a, "--file="); ok {
				file = f
			}
		}
		cmd.Level, cmd.Actions = max(cmd.Level, L2), appendAction(cmd.Actions, ActWrite)
		cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: file})
	case "reflog", "gc", "prune":
		if sub != "reflog" && slices.ContainsFunc(rest, func(a string) bool { return strings.HasPrefix(a, "--prune") || a == "--expire" }) ||
			sub == "reflog" && len(rest) > 0 && (rest[0] == "expire" || rest[0] == "delete") || sub == "prune" {
			deletes() // what only the reflog still reaches: the undo of a reset, a rebase
		}
	case "lfs":
		if len(rest) > 0 {
			switch rest[0] {
			case "pull", "fetch", "clone":
				cmd.Level, cmd.Actions = max(cmd.Level, L3), appendAction(cmd.Actions, ActNetwork, ActWrite)
			case "push":
				cmd.Level, cmd.Actions = max(cmd.Level, L4), appendAction(cmd.Actions, ActNetwork)
			}
		}
	case "stash":
		if len(rest) > 0 && (rest[0] == "list" || rest[0] == "show") {
			cmd.Level, cmd.Actions = L1, []Action{ActRead}
		}
		if len(rest) > 0 && (rest[0] == "drop" || rest[0] == "clear") {
			deletes()
		}
	case "branch", "tag":
		for _, a := range rest {
			if a == "-D" || a == "-d" || a == "--delete" || a == "-f" || a == "--force" {
				deletes()
			}
		}
	case "update-ref":
		for _, a := range rest {
			if a == "-d" || a == "--stdin" {
				deletes()
			}
		}
	case "worktree":
		if len(rest) > 0 && rest[0] == "add" {
			for _, a := range rest[1:] {
				if !strings.HasPrefix(a, "-") {
					cmd.Resources = append(cmd.Resources, Resource{Action: ActWrite, Path: a})
					cmd.Actions = appendAction(cmd.Actions, ActWrite)
					break
				}
			}
		}
	case "ls-remote", "remote", "submodule":
		if anyContains(rest, "://") || anyContains(rest, "@") || sub == "ls-remote" || len(rest) > 0 && (rest[0] == "update" || rest[0] == "sync") {
			cmd.Level, cmd.Actions = max(cmd.Level, L3), appendAction(cmd.Actions, ActNetwork)
		}
	case "", "status", "log", "diff", "show", "blame", "commit", "switch", "fetch", "pull", "push", "clean",
		"rev-parse", "merge", "rebase", "grep", "ls-files", "describe", "shortlog", "cherry-pick",
		"revert", "bisect", "am", "apply", "fsck", "notes", "cat-file", "rev-list":
	default:
		if _, known := subcommands["git "+sub]; known {
			break
		}
		cmd.RunsCode = true // an alias, or a git-<name> program: code the policy cannot read
		cmd.Actions = appendAction(cmd.Actions, ActExecute)
	}
}

// scpPaths are the local files scp sends (every local operand but the last) and the
// one it writes (the last, when it is local).
func scpPaths(args []string) []Resource {
	var ops []string
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			if slices.Contains([]string{"-c", "-F", "-i", "-J", "-l", "-o", "-P", "-S", "-D", "-X"}, args[i]) {
				i++
			}
			continue
		}
		ops = append(ops, args[i])
	}
	var out []Resource
	for i, o := range ops {
		if strings.Contains(o, ":") {
			continue
		}
		act := ActRead
		if i == len(ops)-1 && len(ops) > 1 {
			act = ActWrite
		}
		out = append(out, Resource{Action: act, Path: o})
	}
	return out
}

// firstOperand is the first argument that is no option.
func firstOperand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-" {
			return a
		}
	}
	return ""
}

// pathspecs are the paths a subcommand that takes them acts on: every operand after
// --, and — for add, mv and restore, whose operands are all paths, and checkout past
// its first operand (a branch or a revision) — the operands before it. Options'
// values (--source=REV, -s REV, -b NAME) are none.
func pathspecs(sub string, rest []string, act Action) []Resource {
	var out []Resource
	operands := 0
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			for _, p := range rest[i+1:] {
				for _, named := range gitPathspec(p) {
					out = append(out, Resource{Action: act, Path: named})
				}
			}
			return out
		case strings.HasPrefix(a, "-"):
			if a == "-s" || a == "--source" || a == "-b" || a == "-B" || a == "--orphan" || a == "--conflict" || a == "--pathspec-from-file" {
				i++
			}
			continue
		}
		operands++
		if sub != "checkout" || operands > 1 {
			for _, named := range gitPathspec(a) {
				out = append(out, Resource{Action: act, Path: named})
			}
		}
	}
	return out
}

// gitReadsHistory are the subcommands that show files' contents as the history
// holds them: what they name is a path checked as any read is (a secret committed
// once is still a secret).
var gitReadsHistory = map[string]bool{"show": true, "log": true, "diff": true, "cat-file": true, "grep": true, "archive": true,
	"blame": true, "annotate": true, "shortlog": true, "whatchanged": true, "difftool": true, "ls-tree": true, "ls-files": true}

// historyPaths are the paths a history-reading subcommand's operands may name:
// REV:PATH (and :PATH, :N:PATH, the index), everything after --, and every other
// operand (git takes a word that is no revision as a path) but grep's pattern.
func historyPaths(sub string, rest []string) []Resource {
	var out []Resource
	read := func(p string) {
		if p != "" {
			for _, named := range gitPathspec(p) {
				out = append(out, Resource{Action: ActRead, Path: named})
			}
		}
	}
	pattern := sub == "grep"
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			for _, p := range rest[i+1:] {
				read(p)
			}
			break
		}
		if strings.HasPrefix(a, "-") {
			if sub == "grep" && (a == "-e" || a == "-f" || a == "--file") {
				pattern = false // the pattern is an option's value
				i++
			}
			if sub == "archive" && (a == "-o" || a == "--output" || a == "--prefix" || a == "--format" || a == "--remote") {
				i++ // its value: where it writes, and how
			}
			continue
		}
		if pattern {
			pattern = false
			continue
		}
		if rev, p, ok := strings.Cut(a, ":"); ok && !strings.HasPrefix(p, "//") { // not a URL
			if rev == "" && len(p) > 1 && p[0] >= '0' && p[0] <= '3' && p[1] == ':' {
				p = p[2:] // :N:PATH, a stage of the index
			}
			read(p)
			continue
		}
		read(a)
	}
	return out
}

// uploads are the files curl or wget sends: -T/--upload-file FILE, a data or form
// option's @FILE (or <FILE), --config/-K, --post-file/--body-file.
func uploads(args []string) []Resource {
	var out []Resource
	read := func(p string) {
		if p != "" && p != "-" {
			out = append(out, Resource{Action: ActRead, Path: p})
		}
	}
	for i := 0; i < len(args); i++ {
		a, v := args[i], ""
		name, joined, hasEq := strings.Cut(a, "=")
		if strings.HasPrefix(a, "--") && hasEq {
			a, v = name, joined
		} else if len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.ContainsRune("TdFKHxi", rune(a[1])) {
			a, v = a[:2], a[2:]
		} else if i+1 < len(args) {
			v = args[i+1]
		}
		switch a {
		case "-T", "--upload-file", "-K", "--config", "--post-file", "--body-file", "-i", "--input-file":
			read(v)
		case "-H", "--header":
			if f, ok := strings.CutPrefix(v, "@"); ok {
				read(f)
			}
		case "-x", "--proxy", "--preproxy":
			out = append(out, Resource{Action: ActNetwork, Domain: host(v)})
		case "-d", "--data", "--data-binary", "--data-urlencode", "--data-ascii", "--json":
			if _, f, ok := strings.Cut(v, "@"); ok {
				read(f)
			}
		case "-F", "--form":
			if _, f, ok := strings.Cut(v, "="); ok && (strings.HasPrefix(f, "@") || strings.HasPrefix(f, "<")) {
				f, _, _ = strings.Cut(f[1:], ";")
				read(f)
			}
		}
	}
	return out
}

func anyContains(args []string, sub string) bool {
	for _, a := range args {
		if strings.Contains(a, sub) {
			return true
		}
	}
	return false
}

func appendAction(acts []Action, more ...Action) []Action {
	for _, m := range more {
		found := false
		for _, a := range acts {
			found = found || a == m
		}
		if !found {
			acts = append(acts, m)
		}
	}
	return acts
}
