package policy

import "strings"

// gitCodeKeys are git settings whose value is a command git runs (through a shell):
// given with -c, the command is read as the script it is.
var gitCodeKeys = []string{"core.pager", "core.editor", "core.fsmonitor", "core.sshcommand", "core.askpass", "sequence.editor",
	"diff.external", "interactive.difffilter", "gpg.program", "gpg.ssh.program", "credential.helper"}

// gitPathKeys are git settings whose value is a file or directory git reads (hooks
// run from, configs included).
var gitPathKeys = []string{"core.hookspath", "include.path", "core.excludesfile", "core.attributesfile", "init.templatedir", "commit.template"}

// codeStrings are the literal command strings a known program's options give it to
// run — git's -c settings and aliases, difftool -x, grep -O, tar's --to-command and
// checkpoint actions and compress programs, zip's -TT, ssh's ProxyCommand and
// LocalCommand, rsync's -e —, read as the scripts they are; and the paths those
// settings name. (The command is opaque all the same: refine says it runs code.)
func codeStrings(name string, args []string, dynamic []bool) (scripts []string, paths []Resource) {
	value := func(i int, a, opt string) (string, bool) {
		if v, ok := strings.CutPrefix(a, opt+"="); ok && strings.HasPrefix(opt, "--") {
			return v, true
		}
		if a == opt && i+1 < len(args) && !dynamic[i+1] {
			return args[i+1], true
		}
		if len(opt) == 2 && strings.HasPrefix(a, opt) && len(a) > 2 {
			return a[2:], true
		}
		return "", false
	}
	for i, a := range args {
		if dynamic[i] {
			continue
		}
		switch name {
		case "git":
			if v, ok := value(i, a, "-c"); ok {
				key, val, _ := strings.Cut(v, "=")
				key = strings.ToLower(key)
				switch {
				case containsString(gitCodeKeys, key) || strings.HasPrefix(key, "pager.") || strings.HasPrefix(key, "filter.") ||
					strings.HasPrefix(key, "merge.") && strings.HasSuffix(key, ".driver") || strings.HasPrefix(key, "diff.") && strings.HasSuffix(key, ".command"):
					scripts = append(scripts, strings.TrimPrefix(val, "!"))
				case strings.HasPrefix(key, "alias.") && strings.HasPrefix(val, "!"):
					scripts = append(scripts, val[1:])
				case containsString(gitPathKeys, key):
					paths = append(paths, Resource{Action: ActRead, Path: val})
				}
			}
			for _, opt := range []string{"-x", "--extcmd", "-O", "--open-files-in-pager"} {
				if v, ok := value(i, a, opt); ok {
					scripts = append(scripts, v)
				}
			}
		case "tar", "gtar", "bsdtar":
			for _, opt := range []string{"--to-command", "--use-compress-program", "-I", "--info-script", "--new-volume-script"} {
				if v, ok := value(i, a, opt); ok {
					scripts = append(scripts, v)
				}
			}
			if v, ok := strings.CutPrefix(a, "--checkpoint-action="); ok {
				if cmd, ok := strings.CutPrefix(v, "exec="); ok {
					scripts = append(scripts, cmd)
				}
			}
		case "zip":
			for _, opt := range []string{"-TT", "--unzip-command"} {
				if v, ok := value(i, a, opt); ok {
					scripts = append(scripts, v)
				}
			}
		case "ssh", "scp", "sftp":
			if v, ok := value(i, a, "-o"); ok {
				key, val, found := strings.Cut(v, "=")
				if !found {
					key, val, _ = strings.Cut(v, " ")
				}
				if k := strings.ToLower(strings.TrimSpace(key)); k == "proxycommand" || k == "localcommand" {
					scripts = append(scripts, val)
				}
			}
		case "rsync":
			for _, opt := range []string{"-e", "--rsh"} {
				if v, ok := value(i, a, opt); ok {
					scripts = append(scripts, v)
				}
			}
		}
	}
	return scripts, paths
}

func containsString(set []string, v string) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}
