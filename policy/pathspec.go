package policy

import (
	"path"
	"regexp"
	"strings"
)

// gitPathspec is what a git pathspec may name, as paths to check: the pathspec
// itself (its magic taken off), and — when it is a pattern, which git matches with
// `*` crossing `/` and leading dots, or when it says icase — every name the
// default-deny patterns stand for that it can match. An excluding pathspec (`:!x`,
// `:(exclude)x`) names nothing read.
func gitPathspec(spec string) []string {
	p, magic := spec, ""
	switch {
	case strings.HasPrefix(p, ":("):
		end := strings.IndexByte(p, ')')
		if end < 0 {
			return []string{p}
		}
		magic, p = p[2:end], p[end+1:]
	case strings.HasPrefix(p, ":!") || strings.HasPrefix(p, ":^"):
		return nil
	case strings.HasPrefix(p, ":/"):
		p = p[2:]
	}
	has := func(m string) bool {
		for _, w := range strings.Split(magic, ",") {
			if w == m || strings.HasPrefix(w, m+":") {
				return true
			}
		}
		return false
	}
	if has("exclude") {
		return nil
	}
	p = strings.TrimPrefix(p, ":/")
	if p == "" {
		return []string{"."}
	}
	out := []string{p}
	literal := has("literal") || !strings.ContainsAny(p, "*?[")
	if literal && !has("icase") {
		return out
	}
	if strings.Trim(p, "*/") == "" {
		return out // every name: not aimed at a secret (the sandbox masks the worktree's)
	}
	re := pathspecPattern(p, literal, has("glob"), has("icase"))
	if re == nil {
		return out
	}
	// The names the patterns stand for, at the top and under the pattern's literal
	// directory (config/*.env can name config/.env).
	lit := p[:strings.IndexAny(p+"*", "*?[")]
	under := lit[:strings.LastIndexByte(lit, '/')+1]
	for _, ex := range deniedExamples {
		for _, name := range []string{ex, under + ex} {
			// A pathspec names a file, or a directory and what is under it.
			for cut := name; cut != "." && cut != ""; cut = path.Dir(cut) {
				if re.MatchString(cut) {
					out = append(out, name)
					break
				}
			}
		}
	}
	return out
}

// pathspecPattern is a pathspec as a regular expression over workspace paths: git's
// wildmatch without its pathname flag (`*` and `?` cross `/`), or with it under the
// glob magic (`**` crosses, `*` does not); literal with the icase magic alone.
func pathspecPattern(p string, literal, glob, icase bool) *regexp.Regexp {
	var b strings.Builder
	if icase {
		b.WriteString("(?i)")
	}
	b.WriteString("^")
	if literal {
		b.WriteString(regexp.QuoteMeta(p))
	} else {
		for i := 0; i < len(p); i++ {
			switch c := p[i]; c {
			case '*':
				if glob && strings.HasPrefix(p[i:], "**") {
					b.WriteString(".*")
					i++
				} else if glob {
					b.WriteString("[^/]*")
				} else {
					b.WriteString(".*")
				}
			case '?':
				if glob {
					b.WriteString("[^/]")
				} else {
					b.WriteString(".")
				}
			case '[':
				end := strings.IndexByte(p[i+1:], ']')
				if end < 0 {
					b.WriteString(`\[`)
					continue
				}
				class := p[i+1 : i+1+end]
				if strings.HasPrefix(class, "!") {
					class = "^" + class[1:]
				}
				b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
				i += end + 1
			case '\\':
				if i+1 < len(p) {
					i++
					b.WriteString(regexp.QuoteMeta(p[i : i+1]))
				}
			default:
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	return re
}
