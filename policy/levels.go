package policy

import "strings"

// Level is a command's risk: L0 reads nothing private … L5 takes privileges.
type Level int

const (
	L0 Level = iota // inspects the environment only: ls, pwd, echo
	L1              // reads file contents: cat, grep, git status
	L2              // builds, tests or changes files in the workspace: go test, make, cp
	L3              // reaches the network or installs: curl, npm install, git fetch
	L4              // destroys or publishes: rm, git push, chmod, kill
	L5              // takes privileges: sudo, su, mount
)

func (l Level) String() string { return "L" + string(rune('0'+int(l))) }

// MarshalText writes a level as L0 … L5.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// ParseLevel reads L0 … L5.
func ParseLevel(s string) (Level, bool) {
	if len(s) == 2 && s[0] == 'L' && s[1] >= '0' && s[1] <= '5' {
		return Level(s[1] - '0'), true
	}
	return 0, false
}

// Action is what a call does to its resources.
type Action string

const (
	ActRead    Action = "read"
	ActWrite   Action = "write"
	ActExecute Action = "execute"
	ActNetwork Action = "network"
	ActDelete  Action = "delete"
)

// argRole says what a command's non-flag arguments are.
type argRole int

const (
	argsNone    argRole = iota
	argsRead            // paths it reads
	argsWrite           // paths it writes
	argsDelete          // paths it deletes
	argsCopy            // paths it reads, the last one it writes (cp, mv)
	argsURL             // URLs (their hosts are domains)
	argsPattern         // the first is a pattern, the rest paths it reads (grep)
	argsMode            // the first is a mode or owner, the rest paths it writes (chmod)
	argsSubcmd          // a subcommand decides (git, go, npm)
)

type commandInfo struct {
	level   Level
	actions []Action
	args    argRole
}

func info(level Level, args argRole, actions ...Action) commandInfo {
	return commandInfo{level: level, actions: actions, args: args}
}

// commands is the risk table. A command not in it is L2 execute: it runs code of its
// own, which rules may allow or not; it is never assumed harmless.
var commands = map[string]commandInfo{
	// L0: the environment only
	"ls": info(L0, argsRead, ActRead), "pwd": info(L0, argsNone), "echo": info(L0, argsNone), "printf": info(L0, argsNone),
	"true": info(L0, argsNone), "false": info(L0, argsNone), "date": info(L0, argsNone), "whoami": info(L0, argsNone),
	"id": info(L0, argsNone), "uname": info(L0, argsNone), "hostname": info(L0, argsNone), "which": info(L0, argsNone),
	"type": info(L0, argsNone), "test": info(L0, argsNone), "[": info(L0, argsNone), "cd": info(L0, argsRead, ActRead),
	"basename": info(L0, argsNone), "dirname": info(L0, argsNone), "seq": info(L0, argsNone), "sleep": info(L0, argsNone),
	"export": info(L0, argsNone), "exit": info(L0, argsNone), "set": info(L0, argsNone), "read": info(L0, argsNone),
	// L1: file contents
	"cat": info(L1, argsRead, ActRead), "head": info(L1, argsRead, ActRead), "tail": info(L1, argsRead, ActRead),
	"less": info(L1, argsRead, ActRead), "more": info(L1, argsRead, ActRead), "wc": info(L1, argsRead, ActRead),
	"sort": info(L1, argsRead, ActRead), "uniq": info(L1, argsRead, ActRead), "cut": info(L1, argsRead, ActRead),
	"tr": info(L1, argsNone, ActRead), "diff": info(L1, argsRead, ActRead), "stat": info(L1, argsRead, ActRead),
	"file": info(L1, argsRead, ActRead), "find": info(L1, argsRead, ActRead), "tree": info(L1, argsRead, ActRead),
	"grep": info(L1, argsPattern, ActRead), "rg": info(L1, argsPattern, ActRead), "egrep": info(L1, argsPattern, ActRead),
	"jq": info(L1, argsPattern, ActRead), "sha256sum": info(L1, argsRead, ActRead), "md5sum": info(L1, argsRead, ActRead),
	"du": info(L1, argsRead, ActRead), "df": info(L0, argsNone), "awk": info(L1, argsPattern, ActRead),
	"sed": info(L1, argsPattern, ActRead), "base64": info(L1, argsRead, ActRead), "xxd": info(L1, argsRead, ActRead),
	// L2: builds, tests, workspace changes
	"mkdir": info(L2, argsWrite, ActWrite), "touch": info(L2, argsWrite, ActWrite), "cp": info(L2, argsCopy, ActRead, ActWrite),
	"mv": info(L2, argsCopy, ActRead, ActWrite), "ln": info(L2, argsCopy, ActRead, ActWrite), "tee": info(L2, argsWrite, ActWrite),
	"make": info(L2, argsNone, ActExecute), "gofmt": info(L1, argsRead, ActRead), "tar": info(L2, argsNone, ActRead, ActWrite),
	"python3": info(L2, argsRead, ActExecute), "python": info(L2, argsRead, ActExecute), "node": info(L2, argsRead, ActExecute),
	"git": info(L2, argsSubcmd), "go": info(L2, argsSubcmd), "npm": info(L2, argsSubcmd), "pip": info(L2, argsSubcmd),
	"cargo": info(L2, argsSubcmd), "pip3": info(L2, argsSubcmd),
	// Package managers and the clients of services: their subcommands that reach the
	// network or publish are known; the rest run code of their own.
	"install": info(L2, argsCopy, ActRead, ActWrite), "gem": info(L2, argsSubcmd), "bundle": info(L2, argsSubcmd), "poetry": info(L2, argsSubcmd), "uv": info(L2, argsSubcmd),
	"composer": info(L2, argsSubcmd), "twine": info(L2, argsSubcmd), "docker": info(L2, argsSubcmd), "podman": info(L2, argsSubcmd),
	"deno": info(L2, argsSubcmd), "gh": info(L2, argsSubcmd), "aria2c": info(L3, argsURL, ActNetwork), "uvx": info(L3, argsNone, ActNetwork, ActExecute),
	// L3: network
	"curl": info(L3, argsURL, ActNetwork), "wget": info(L3, argsURL, ActNetwork), "nc": info(L3, argsURL, ActNetwork),
	"ncat": info(L3, argsURL, ActNetwork), "ssh": info(L3, argsURL, ActNetwork), "scp": info(L3, argsURL, ActNetwork),
	"rsync": info(L3, argsURL, ActNetwork), "ping": info(L3, argsURL, ActNetwork), "telnet": info(L3, argsURL, ActNetwork),
	// L4: destroys or publishes
	"rm": info(L4, argsDelete, ActDelete), "rmdir": info(L4, argsDelete, ActDelete), "shred": info(L4, argsDelete, ActDelete),
	"dd": info(L4, argsNone, ActWrite), "chmod": info(L4, argsMode, ActWrite), "chown": info(L4, argsMode, ActWrite),
	"kill": info(L4, argsNone, ActExecute), "pkill": info(L4, argsNone, ActExecute), "killall": info(L4, argsNone, ActExecute),
	"truncate": info(L4, argsWrite, ActWrite), "mkfs": info(L4, argsNone, ActDelete),
	// L5: privileges
	"su": info(L5, argsNone, ActExecute), "doas": info(L5, argsNone, ActExecute), "mount": info(L5, argsNone, ActExecute),
	"umount": info(L5, argsNone, ActExecute), "chroot": info(L5, argsNone, ActExecute), "passwd": info(L5, argsNone, ActExecute),
	"useradd": info(L5, argsNone, ActExecute), "systemctl": info(L5, argsNone, ActExecute),
	// Jobs that outlive the command, and the machine's packages: system changes.
	"crontab": info(L5, argsNone, ActExecute), "apt": info(L5, argsNone, ActExecute, ActNetwork), "apt-get": info(L5, argsNone, ActExecute, ActNetwork),
	"dnf": info(L5, argsNone, ActExecute, ActNetwork), "yum": info(L5, argsNone, ActExecute, ActNetwork), "apk": info(L5, argsNone, ActExecute, ActNetwork),
	"pacman": info(L5, argsNone, ActExecute, ActNetwork), "brew": info(L5, argsNone, ActExecute, ActNetwork), "snap": info(L5, argsNone, ActExecute, ActNetwork), "reboot": info(L5, argsNone, ActExecute),
	"insmod": info(L5, argsNone, ActExecute), "modprobe": info(L5, argsNone, ActExecute), "rmmod": info(L5, argsNone, ActExecute),
	"setcap": info(L5, argsNone, ActExecute), "mknod": info(L5, argsNone, ActExecute), "pkexec": info(L5, argsNone, ActExecute),
	"capsh": info(L5, argsNone, ActExecute), "mkfifo": info(L2, argsWrite, ActWrite), "sysctl": info(L0, argsNone),
	"ip": info(L0, argsNone), "unlink": info(L4, argsDelete, ActDelete),
	"pushd": info(L0, argsRead, ActRead), "popd": info(L0, argsNone),
	// L3: more programs that open connections
	"socat": info(L3, argsNone, ActNetwork), "dig": info(L3, argsNone, ActNetwork), "host": info(L3, argsNone, ActNetwork),
	"nslookup": info(L3, argsNone, ActNetwork), "drill": info(L3, argsNone, ActNetwork), "npx": info(L3, argsNone, ActNetwork, ActExecute),
	"ftp": info(L3, argsURL, ActNetwork), "sftp": info(L3, argsURL, ActNetwork), "openssl": info(L1, argsNone),
}

// subcommands refine argsSubcmd commands: "<cmd> <sub>".
var subcommands = map[string]commandInfo{
	"git status": info(L1, argsNone, ActRead), "git log": info(L1, argsNone, ActRead), "git diff": info(L1, argsNone, ActRead),
	"git show": info(L1, argsNone, ActRead), "git ls-files": info(L1, argsNone, ActRead), "git grep": info(L1, argsNone, ActRead),
	"git cat-file": info(L1, argsNone, ActRead), "git ls-tree": info(L1, argsNone, ActRead), "git rev-parse": info(L1, argsNone, ActRead),
	"git describe": info(L1, argsNone, ActRead), "git shortlog": info(L1, argsNone, ActRead), "git rev-list": info(L1, argsNone, ActRead),
	"git archive": info(L1, argsNone, ActRead), "git remote": info(L1, argsNone, ActRead), "git tag": info(L1, argsNone, ActRead),
	"git merge": info(L2, argsNone, ActWrite), "git rebase": info(L2, argsNone, ActWrite), "git cherry-pick": info(L2, argsNone, ActWrite),
	"git revert": info(L2, argsNone, ActWrite), "git am": info(L2, argsNone, ActWrite), "git apply": info(L2, argsRead, ActWrite),
	"git mv": info(L2, argsNone, ActWrite), "git rm": info(L4, argsDelete, ActDelete), "git init": info(L2, argsNone, ActWrite), "git branch": info(L1, argsNone, ActRead), "git blame": info(L1, argsRead, ActRead),
	"git add": info(L2, argsRead, ActWrite), "git commit": info(L2, argsNone, ActWrite), "git checkout": info(L2, argsNone, ActWrite),
	"git switch": info(L2, argsNone, ActWrite), "git stash": info(L2, argsNone, ActWrite), "git restore": info(L2, argsWrite, ActWrite),
	"git reflog": info(L1, argsNone, ActRead), "git gc": info(L2, argsNone, ActWrite), "git prune": info(L4, argsNone, ActDelete),
	"git lfs":   info(L1, argsNone, ActRead),
	"git fetch": info(L3, argsNone, ActNetwork), "git pull": info(L3, argsNone, ActNetwork, ActWrite), "git clone": info(L3, argsURL, ActNetwork, ActWrite),
	"git push": info(L4, argsNone, ActNetwork), "git reset": info(L4, argsNone, ActWrite), "git clean": info(L4, argsNone, ActDelete),
	"go build": info(L2, argsNone, ActExecute), "go test": info(L2, argsNone, ActExecute), "go vet": info(L2, argsNone, ActExecute),
	"go run": info(L2, argsNone, ActExecute), "go fmt": info(L2, argsNone, ActWrite), "go version": info(L0, argsNone),
	"go env": info(L0, argsNone), "go list": info(L1, argsNone, ActRead), "go mod": info(L3, argsNone, ActNetwork, ActWrite),
	"go get": info(L3, argsNone, ActNetwork, ActWrite), "go install": info(L3, argsNone, ActNetwork, ActWrite),
	"npm test": info(L2, argsNone, ActExecute), "npm run": info(L2, argsNone, ActExecute), "npm install": info(L3, argsNone, ActNetwork, ActWrite),
	"npm ci": info(L3, argsNone, ActNetwork, ActWrite), "npm publish": info(L4, argsNone, ActNetwork),
	"npm i": info(L3, argsNone, ActNetwork, ActWrite), "npm add": info(L3, argsNone, ActNetwork, ActWrite), "npm update": info(L3, argsNone, ActNetwork, ActWrite),
	"npm up": info(L3, argsNone, ActNetwork, ActWrite), "npm install-test": info(L3, argsNone, ActNetwork, ActWrite), "npm it": info(L3, argsNone, ActNetwork, ActWrite),
	"npm exec": info(L3, argsNone, ActNetwork, ActExecute), "npm x": info(L3, argsNone, ActNetwork, ActExecute),
	"pip install": info(L3, argsNone, ActNetwork, ActWrite), "pip list": info(L1, argsNone, ActRead),
	"pip download": info(L3, argsNone, ActNetwork, ActWrite), "pip3 install": info(L3, argsNone, ActNetwork, ActWrite),
	"pip3 download": info(L3, argsNone, ActNetwork, ActWrite), "pip3 list": info(L1, argsNone, ActRead),
	"cargo build": info(L2, argsNone, ActExecute), "cargo test": info(L2, argsNone, ActExecute), "cargo publish": info(L4, argsNone, ActNetwork),
	"cargo fetch": info(L3, argsNone, ActNetwork, ActWrite), "cargo install": info(L3, argsNone, ActNetwork, ActWrite), "cargo add": info(L3, argsNone, ActNetwork, ActWrite),
	"cargo update": info(L3, argsNone, ActNetwork, ActWrite), "cargo login": info(L4, argsNone, ActNetwork), "cargo yank": info(L4, argsNone, ActNetwork),
	"gem install": info(L3, argsNone, ActNetwork, ActWrite), "gem update": info(L3, argsNone, ActNetwork, ActWrite), "gem fetch": info(L3, argsNone, ActNetwork, ActWrite),
	"gem push": info(L4, argsNone, ActNetwork), "gem list": info(L1, argsNone, ActRead),
	"bundle install": info(L3, argsNone, ActNetwork, ActWrite), "bundle update": info(L3, argsNone, ActNetwork, ActWrite), "bundle add": info(L3, argsNone, ActNetwork, ActWrite),
	"poetry install": info(L3, argsNone, ActNetwork, ActWrite), "poetry add": info(L3, argsNone, ActNetwork, ActWrite), "poetry update": info(L3, argsNone, ActNetwork, ActWrite),
	"poetry lock": info(L3, argsNone, ActNetwork, ActWrite), "poetry publish": info(L4, argsNone, ActNetwork),
	"uv pip": info(L3, argsNone, ActNetwork, ActWrite), "uv add": info(L3, argsNone, ActNetwork, ActWrite), "uv sync": info(L3, argsNone, ActNetwork, ActWrite),
	"uv lock": info(L3, argsNone, ActNetwork, ActWrite), "uv tool": info(L3, argsNone, ActNetwork, ActWrite), "uv publish": info(L4, argsNone, ActNetwork),
	"composer install": info(L3, argsNone, ActNetwork, ActWrite), "composer require": info(L3, argsNone, ActNetwork, ActWrite), "composer update": info(L3, argsNone, ActNetwork, ActWrite),
	"twine upload": info(L4, argsNone, ActNetwork),
	"docker pull":  info(L3, argsNone, ActNetwork), "docker push": info(L4, argsNone, ActNetwork), "docker login": info(L4, argsNone, ActNetwork),
	"podman pull": info(L3, argsNone, ActNetwork), "podman push": info(L4, argsNone, ActNetwork), "podman login": info(L4, argsNone, ActNetwork),
	"deno install": info(L3, argsNone, ActNetwork, ActWrite), "deno add": info(L3, argsNone, ActNetwork, ActWrite),
	"gh release": info(L4, argsNone, ActNetwork), "gh pr": info(L3, argsNone, ActNetwork), "gh issue": info(L3, argsNone, ActNetwork),
	"gh repo": info(L4, argsNone, ActNetwork), "gh api": info(L4, argsNone, ActNetwork), "gh gist": info(L4, argsNone, ActNetwork),
	"gh workflow": info(L4, argsNone, ActNetwork), "gh run": info(L3, argsNone, ActNetwork), "gh auth": info(L4, argsNone, ActNetwork),
	"gh secret": info(L4, argsNone, ActNetwork),
}

// wrappers run the command in their arguments; the policy looks through them. skip
// returns how many arguments (after the wrapper's name) precede the wrapped command,
// or -1 when they cannot be read.
var wrappers = map[string]func(args []string) int{
	"env": func(a []string) int {
		i := 0
		for i < len(a) && (len(a[i]) > 0 && a[i][0] == '-' || containsEq(a[i])) {
			if a[i] == "-u" || a[i] == "--unset" {
				i += 2 // a name to unset
				continue
			}
			if a[i] == "-C" || a[i] == "-S" || strings.HasPrefix(a[i], "--split-string") || strings.HasPrefix(a[i], "--chdir") ||
				strings.HasPrefix(a[i], "-S") && !strings.HasPrefix(a[i], "--") || strings.HasPrefix(a[i], "-C") && !strings.HasPrefix(a[i], "--") {
				return -1 // another directory, or a split string: not looked through
			}
			i++
		}
		return min(i, len(a))
	},
	"timeout": func(a []string) int { return flagsThen(a, 1, "-s", "-k", "--signal", "--kill-after") },
	"nice":    func(a []string) int { return flagsThen(a, 0, "-n", "--adjustment") },
	"nohup":   func(a []string) int { return flagsThen(a, 0) },
	"time":    func(a []string) int { return flagsThen(a, 0, "-o", "--output", "-f", "--format") },
	"command": func(a []string) int {
		for _, f := range a[:max(flagsThen(a, 0), 0)] {
			if f == "-v" || f == "-V" {
				return len(a) // it says what a name is: nothing runs
			}
		}
		return flagsThen(a, 0)
	},
	"builtin": func(a []string) int { return flagsThen(a, 0) },
	"exec":    func(a []string) int { return flagsThen(a, 0, "-a") },
	"stdbuf":  func(a []string) int { return flagsThen(a, 0, "-i", "-o", "-e") },
	"ionice":  func(a []string) int { return flagsThen(a, 0, "-c", "-n", "-p") },
	"setsid":  func(a []string) int { return flagsThen(a, 0) },
	"xargs": func(a []string) int {
		return flagsThen(a, 0, "-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a", "--max-procs", "--max-args", "--delimiter", "--arg-file",
			"--process-slot-var", "--max-lines", "--max-chars", "--eof")
	},
	"sudo": func(a []string) int { return flagsThen(a, 0, "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U") },
	"taskset": func(a []string) int {
		n := flagsThen(a, 0)
		for _, f := range a[:max(n, 0)] {
			if f == "-p" || f == "--pid" {
				return len(a) // another process: nothing wrapped
			}
		}
		return flagsThen(a, 1)
	},
	"chrt":     func(a []string) int { return flagsThen(a, 1) },
	"prlimit":  func(a []string) int { return flagsThen(a, 0, "-p", "--pid") },
	"fakeroot": func(a []string) int { return flagsThen(a, 0, "-s", "-i", "-l", "-b", "--faked", "--lib") },
	"valgrind": func(a []string) int { return flagsThen(a, 0) },
	"setpriv": func(a []string) int {
		return flagsThen(a, 0, "--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups", "--inh-caps", "--ambient-caps",
			"--bounding-set", "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile", "--landlock-access", "--landlock-rule")
	},
	"runuser": func(a []string) int {
		for _, f := range a {
			if f == "-c" || f == "--command" || f == "-s" || f == "--shell" || f == "-l" || f == "--login" || f == "-" {
				return -1 // a command string, or a login shell: not looked through
			}
		}
		return flagsThen(a, 0, "-u", "--user", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment")
	},
	"sg": func(a []string) int {
		for _, f := range a {
			if f == "-c" {
				return -1
			}
		}
		return flagsThen(a, 1)
	},
}

// wrapperLevel is the floor a wrapper puts under what it wraps.
var wrapperLevel = map[string]Level{"sudo": L5, "runuser": L5, "sg": L5, "setpriv": L5}

// shells run a string as a script with -c; it is parsed again.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true}

// opaquePrograms run code the policy cannot see: opaque, whatever their arguments.
// unknownWrapper is why a program that runs what it is given, in ways the policy does
// not read, is opaque.
const unknownWrapper = "an unknown wrapper"

var opaquePrograms = map[string]string{
	"eval": "eval runs a string as code", "source": "source runs a file as code", ".": "source runs a file as code",
	"watch": unknownWrapper, "parallel": unknownWrapper, "script": unknownWrapper,
	"expect": unknownWrapper, "strace": unknownWrapper, "ltrace": unknownWrapper, "gdb": unknownWrapper,
	"busybox": unknownWrapper, "flock": unknownWrapper, "unshare": unknownWrapper, "nsenter": unknownWrapper,
	"screen": unknownWrapper, "tmux": unknownWrapper, "at": unknownWrapper, "batch": unknownWrapper,
	"trap": "trap runs a string as code", "coproc": unknownWrapper,
}

func containsEq(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			return i > 0
		}
	}
	return false
}

// flagsThen skips leading flags (and the values of those in valued), then `positional`
// more arguments (timeout's duration).
func flagsThen(a []string, positional int, valued ...string) int {
	i := 0
	for i < len(a) && len(a[i]) > 1 && a[i][0] == '-' {
		if a[i] == "--" {
			i++
			break
		}
		takes := false
		for _, v := range valued {
			takes = takes || a[i] == v
		}
		i++
		if takes {
			i++
		}
	}
	i += positional
	if i > len(a) {
		return -1
	}
	return i
}
