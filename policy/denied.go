package policy

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DeniedBy says which default-deny pattern a workspace-relative path matches, or "".
// It is called for every entry of a workspace before each command (the sandbox masks
// what it names), so each pattern is matched by its shape — `**/<name glob>` on the
// last component, `**/<dir>/…/**` on consecutive components anywhere, `**/<dir>/<name>`
// on the last ones — without allocating, with doublestar for any other shape.
func DeniedBy(rel string) string {
	if strings.Contains(rel, "//") || strings.HasPrefix(rel, "./") || strings.Contains(rel, "/./") || strings.HasSuffix(rel, "/") {
		rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
	}
	for i := range deniedShapes {
		if deniedShapes[i].match(rel) {
			return deniedShapes[i].pattern
		}
	}
	return ""
}

// deniedShape is one default-deny pattern, taken apart once.
type deniedShape struct {
	pattern string
	name    string // **/<name glob>
	prefix  string // the name glob is <prefix>*
	suffix  string // the name glob is *<suffix>
	dirs    string // **/<d1>/<d2>/**: these consecutive components anywhere
	tail    string // **/<d>/<name>: these last components
	under   string // **/<d1>/<d2>/**/<name>: name as the last component, below these
}

var deniedShapes = func() []deniedShape {
	out := make([]deniedShape, len(defaultDenied))
	for i, pat := range defaultDenied {
		out[i].pattern = pat
		rest, ok := strings.CutPrefix(pat, "**/")
		if !ok {
			continue
		}
		if dirs, name, ok := strings.Cut(rest, "/**/"); ok && !strings.ContainsAny(dirs+name, "*?[\\") && !strings.Contains(name, "/") {
			out[i].under, out[i].name = dirs, name
			continue
		}
		segs := strings.Split(rest, "/")
		literal := !strings.ContainsAny(strings.Join(segs[:len(segs)-1], "/"), "*?[\\")
		switch {
		case len(segs) == 1:
			out[i].name = segs[0]
			if g := segs[0]; !strings.ContainsAny(g, "?[\\") && strings.Count(g, "*") == 1 {
				switch {
				case strings.HasSuffix(g, "*"):
					out[i].prefix = strings.TrimSuffix(g, "*")
				case strings.HasPrefix(g, "*"):
					out[i].suffix = strings.TrimPrefix(g, "*")
				}
			}
		case segs[len(segs)-1] == "**" && literal:
			out[i].dirs = strings.Join(segs[:len(segs)-1], "/")
		case literal && !strings.ContainsAny(segs[len(segs)-1], "*?[\\"):
			out[i].tail = rest
		}
	}
	return out
}()

func (s *deniedShape) match(rel string) bool {
	switch {
	case s.under != "":
		i := strings.LastIndexByte(rel, '/')
		return i >= 0 && rel[i+1:] == s.name && hasComponents(rel[:i], s.under)
	case s.prefix != "":
		return strings.HasPrefix(rel[strings.LastIndexByte(rel, '/')+1:], s.prefix)
	case s.suffix != "":
		return strings.HasSuffix(rel, s.suffix) // the suffix holds no slash: it ends the last component
	case s.name != "":
		m, _ := path.Match(s.name, rel[strings.LastIndexByte(rel, '/')+1:])
		return m
	case s.dirs != "":
		return hasComponents(rel, s.dirs)
	case s.tail != "":
		return rel == s.tail || strings.HasSuffix(rel, s.tail) && rel[len(rel)-len(s.tail)-1] == '/'
	}
	m, _ := doublestar.Match(s.pattern, rel)
	return m
}

// hasComponents says whether the component sequence seq stands in rel, at
// component boundaries, anywhere.
func hasComponents(rel, seq string) bool {
	for i := 0; ; {
		j := strings.Index(rel[i:], seq)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(seq)
		if (start == 0 || rel[start-1] == '/') && (end == len(rel) || rel[end] == '/') {
			return true
		}
		i = start + 1
	}
}

// MayBeDenied says whether a path whose last component is name could be on the
// default-deny list (as a file, or as a directory whose contents are): false lets a
// walker of a large tree pass an entry by without building its path.
func MayBeDenied(name string) bool {
	for i := range deniedShapes {
		s := &deniedShapes[i]
		switch {
		case s.prefix != "":
			if strings.HasPrefix(name, s.prefix) {
				return true
			}
		case s.suffix != "":
			if strings.HasSuffix(name, s.suffix) {
				return true
			}
		case s.name != "":
			if m, _ := path.Match(s.name, name); m {
				return true
			}
		case s.under != "":
			if name == s.name {
				return true
			}
			for _, c := range strings.Split(s.under, "/") {
				if c == name {
					return true
				}
			}
		case s.dirs != "" || s.tail != "":
			for _, c := range strings.Split(s.dirs+s.tail, "/") {
				if c == name {
					return true
				}
			}
		default:
			return true // a shape not taken apart: look at the whole path
		}
	}
	return false
}

// deniedExamples are names the default-deny patterns stand for, to try a glob on.
var deniedExamples = []string{".env", ".env.local", ".envrc", "server.pem", "server.key", "id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", ".ssh", ".gnupg",
	".git/config", ".git/hooks", ".git-credentials", ".netrc", ".pgpass", ".vault-token", ".s3cfg", ".boto", ".aws/credentials", ".kube/config", ".docker/config.json"}

// GlobMayDeny says which default-deny pattern a glob (a path with *, ? or [) could
// match when it is expanded — cat .e?v is cat .env —, or "". The glob is tried on
// the names the patterns stand for, not only on the files there now.
func GlobMayDeny(rel string) string {
	if !strings.ContainsAny(rel, "*?[") {
		return ""
	}
	dir, base := path.Split(rel)
	if strings.ContainsAny(dir, "*?[") {
		if pat := globDirsMayDeny(rel); pat != "" {
			return pat
		}
	}
	if base == "*" || base == "**" {
		return "" // every name: not aimed at a secret (the sandbox masks what secrets it expands to)
	}
	for _, ex := range deniedExamples {
		exDir, exBase := path.Split(ex)
		if strings.HasPrefix(exBase, ".") && !strings.HasPrefix(base, ".") {
			continue // a shell's glob does not match a leading dot unless it says one
		}
		candidate := dir + ex
		if exDir != "" { // .git/config: the glob's last two components
			parent := path.Base(strings.TrimSuffix(dir, "/"))
			if m, _ := path.Match(parent, strings.TrimSuffix(exDir, "/")); !m {
				continue
			}
			if m, _ := path.Match(base, exBase); !m {
				continue
			}
			if pat := DeniedBy(strings.TrimSuffix(dir, "/") + "/../" + ex); pat != "" {
				return pat
			}
			continue
		}
		if m, _ := path.Match(base, exBase); m {
			if pat := DeniedBy(candidate); pat != "" {
				return pat
			}
			if pat := DeniedBy(candidate + "/x"); pat != "" {
				return pat
			}
		}
	}
	return ""
}

// globDirsMayDeny is GlobMayDeny for a glob in a directory component (.gi[t]/hooks/x,
// */.ssh/id_rsa): each globbed component is tried on the components of the names the
// patterns stand for (and on a plain name), and the paths that makes are checked.
func globDirsMayDeny(rel string) string {
	comps := strings.Split(rel, "/")
	names := map[string]bool{"x": true}
	for _, ex := range deniedExamples {
		for _, c := range strings.Split(ex, "/") {
			names[c] = true
		}
	}
	paths := []string{""}
	for i, c := range comps {
		options := []string{c}
		if strings.ContainsAny(c, "*?[") {
			options = options[:0]
			for n := range names {
				if strings.HasPrefix(n, ".") && !strings.HasPrefix(c, ".") {
					continue // a shell's glob does not match a leading dot unless it says one
				}
				if m, _ := path.Match(c, n); m {
					options = append(options, n)
				}
			}
		}
		next := make([]string, 0, len(paths)*len(options))
		for _, p := range paths {
			for _, o := range options {
				if i > 0 {
					o = p + "/" + o
				}
				next = append(next, o)
			}
		}
		if len(next) > 4096 {
			return "**/*" // too many ways to expand to check each: taken as aimed at one
		}
		paths = next
	}
	for _, p := range paths {
		if pat := DeniedBy(p); pat != "" {
			return pat
		}
		if pat := DeniedBy(p + "/x"); pat != "" {
			return pat
		}
	}
	return ""
}

// credentialFiles are files denied only when they hold credentials: their names,
// and what in them says so (the keys their tools keep tokens and passwords under).
var credentialFiles = map[string][]string{
	".npmrc":   {"_authToken", "_auth", "_password", "password"},
	".yarnrc":  {"_authToken", "npmAuthToken"},
	".pypirc":  {"password"},
	"pip.conf": {"password"},
}

// urlCredentials is a URL with a user and password in it (pip.conf's index-url).
var urlCredentials = regexp.MustCompile(`://[^\s/@:]+:[^\s/@]+@`)

// CredentialFile says whether files named name are denied when they hold
// credentials (HoldsCredentials).
func CredentialFile(name string) bool {
	_, ok := credentialFiles[name]
	return ok
}

// HoldsCredentials says why a file named name whose content begins with head holds
// credentials — the key found —, or "".
func HoldsCredentials(name string, head []byte) string {
	for _, key := range credentialFiles[name] {
		if bytes.Contains(head, []byte(key)) {
			return fmt.Sprintf("holds credentials (%s)", key)
		}
	}
	if CredentialFile(name) && urlCredentials.Match(head) {
		return "holds credentials (a URL with a password)"
	}
	return ""
}
