package workspacetools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/turnlog/turnlog/sandbox"
)

type readArgs struct {
	Path      string `json:"path" jsonschema:"description=A path inside the workspace"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"minimum=1,description=First line to read (default 1)"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"minimum=1,description=Last line to read (default: as far as the byte cap allows)"`
	MaxBytes  int    `json:"max_bytes,omitempty" jsonschema:"minimum=1,maximum=1048576,description=Bytes of content to return (default 65536)"`
}

type readResult struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"` // the last line returned (start_line - 1 when none)
	Content   string `json:"content"`  // each line as "<number>\t<text>"
	NextLine  int    `json:"next_start_line,omitempty"`
	SHA256    string `json:"sha256"` // of the whole file, what edit_file checks it against
	Truncation
}

func readFile(ws *sandbox.Workspace, st *seen) func(context.Context, readArgs) (any, error) {
	return func(ctx context.Context, a readArgs) (any, error) {
		f, rel, err := ws.Open(a.Path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return nil, fmt.Errorf("%s is a directory; use glob to list it", rel)
		}
		r := bufio.NewReaderSize(f, 64<<10)
		head, _ := r.Peek(binaryProbe)
		if bytes.IndexByte(head, 0) >= 0 {
			return nil, fmt.Errorf("%s is a binary file; read_file reads text only", rel)
		}
		start, limit := max(a.StartLine, 1), a.MaxBytes
		if limit <= 0 {
			limit = DefaultReadBytes
		}
		limit = min(limit, MaxReadBytes)
		res := readResult{Path: rel, StartLine: start, EndLine: start - 1}
		var b strings.Builder
		for n := 1; ; n++ {
			line, cut, err := readLine(r, limit)
			if line == "" && !cut && err != nil {
				if err != io.EOF {
					return nil, err
				}
				break
			}
			if n < start {
				continue
			}
			if a.EndLine > 0 && n > a.EndLine {
				break
			}
			if cut {
				res.Truncated, res.Reason, res.NextLine = true, fmt.Sprintf("line %d is longer than the byte cap (%d)", n, limit), n+1
				break
			}
			entry := fmt.Sprintf("%d\t%s", n, line) + "\n"
			if b.Len()+len(entry) > limit {
				res.Truncated = true
				res.Reason = fmt.Sprintf("the byte cap (%d) was reached; continue at start_line %d", limit, n)
				res.NextLine = n
				break
			}
			b.WriteString(entry)
			res.EndLine = n
		}
		res.Content = b.String()
		if res.SHA256, err = st.rememberRead(ctx, f, rel); err != nil {
			return nil, err
		}
		return res, nil
	}
}

// readLine reads one line without its newline, keeping at most keep bytes of it (the
// rest is read and dropped, so a huge line never sits in memory); cut says it was longer.
func readLine(r *bufio.Reader, keep int) (string, bool, error) {
	var b []byte
	cut := false
	for {
		chunk, err := r.ReadSlice('\n')
		if len(b)+len(chunk) > keep {
			cut = true
			chunk = chunk[:max(0, keep-len(b))]
		}
		b = append(b, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		line := strings.TrimSuffix(string(b), "\n")
		return line, cut, err
	}
}
