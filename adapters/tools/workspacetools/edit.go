package workspacetools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
	"github.com/turnlog/turnlog/undo"
)

// MaxEditBytes caps the size of a file edit_file changes.
const MaxEditBytes = 4 << 20

// seen remembers, per session, the content of each file as the session last read or
// wrote it, so an edit of a file that changed on disk since is refused. What it does
// not hold (this process did not run the read: a restart, a replayed turn) it asks
// the log through recall.
type seen struct {
	mu     sync.Mutex
	files  map[string]map[string]seenFile // by session, then path
	recall Recall
}

// Recall reads from a session's log (a branch's source included) the sha256 each
// file had when the session last read or wrote it: the "sha256" of the outputs of
// read_file, write_file and edit_file, by path.
type Recall func(ctx context.Context, session string) (map[string]string, error)

// seenFile is a file's content hash, and the size and modification time it had when
// hashed (paging through an unchanged file does not hash it again).
type seenFile struct {
	hash  string
	size  int64
	mtime time.Time
}

func sessionOf(ctx context.Context) string {
	ci, _ := fsm.CallInfoFrom(ctx)
	return ci.Session
}

func (s *seen) remember(ctx context.Context, rel string, f seenFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	session := sessionOf(ctx)
	if s.files[session] == nil {
		s.files[session] = map[string]seenFile{}
	}
	s.files[session][rel] = f
}

func (s *seen) last(ctx context.Context, rel string) (seenFile, bool) {
	s.mu.Lock()
	f, ok := s.files[sessionOf(ctx)][rel]
	s.mu.Unlock()
	return f, ok
}

// forget makes paths unread for session (a revert put them back); nil paths,
// every path (what the log says is recalled again).
func (s *seen) forget(session string, paths []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if paths == nil {
		delete(s.files, session)
		return
	}
	for _, p := range paths {
		delete(s.files[session], p)
	}
}

// lastLogged is last, falling back on the log: what a read before a restart saw.
func (s *seen) lastLogged(ctx context.Context, rel string) (seenFile, bool, error) {
	if f, ok := s.last(ctx, rel); ok || s.recall == nil {
		return f, ok, nil
	}
	ci, _ := fsm.CallInfoFrom(ctx)
	hashes, err := s.recall(ctx, ci.Session)
	if err != nil {
		return seenFile{}, false, fmt.Errorf("what this session read: %w", err)
	}
	h, ok := hashes[rel]
	if !ok {
		return seenFile{}, false, nil
	}
	f := seenFile{hash: h}
	s.remember(ctx, rel, f)
	return f, true, nil
}

// rememberRead records what a read saw and returns it: the file's hash, computed
// (streamed) only if its size or modification time moved since the session last saw
// it.
func (s *seen) rememberRead(ctx context.Context, f *os.File, rel string) (string, error) {
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if prev, ok := s.last(ctx, rel); ok && prev.size == st.Size() && prev.mtime.Equal(st.ModTime()) && !prev.mtime.IsZero() {
		return prev.hash, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	s.remember(ctx, rel, seenFile{hash: sum, size: st.Size(), mtime: st.ModTime()})
	return sum, nil
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

type editArgs struct {
	Path      string `json:"path" jsonschema:"description=A file of the workspace this session has read"`
	OldString string `json:"old_string" jsonschema:"description=Text that occurs exactly once in the file"`
	NewString string `json:"new_string" jsonschema:"description=What replaces it"`
}

type editResult struct {
	Path    string   `json:"path"`
	SHA256  string   `json:"sha256"`        // of the whole new file
	Changed [][2]int `json:"changed_lines"` // [first, last] line ranges of the new file that changed (last < first: lines removed before first)
	Diff    string   `json:"diff"`
	Truncation
}

func editFile(ws *sandbox.Workspace, st *seen, wss *Workspaces) func(context.Context, editArgs) (any, error) {
	return func(ctx context.Context, a editArgs) (any, error) {
		if a.OldString == "" {
			return nil, fmt.Errorf("old_string is empty; use write_file to create a file")
		}
		// From the read to the write: no apply or other tool writes the file between.
		unlock, err := ws.Lock()
		if err != nil {
			return nil, err
		}
		defer unlock()
		f, rel, err := ws.Open(a.Path)
		if err != nil {
			return nil, err
		}
		raw, err := io.ReadAll(io.LimitReader(f, MaxEditBytes+1))
		f.Close()
		if err != nil {
			return nil, err
		}
		if len(raw) > MaxEditBytes {
			return nil, fmt.Errorf("%s is larger than the %d bytes edit_file changes", rel, MaxEditBytes)
		}
		old := string(raw)
		last, read, err := st.lastLogged(ctx, rel)
		switch {
		case err != nil:
			return nil, err
		case !read:
			return nil, fmt.Errorf("%s has not been read in this session; read it with read_file first", rel)
		case last.hash != hashOf(old):
			return nil, fmt.Errorf("the file changed since it was read: %s is not what this session last read or wrote; read it again", rel)
		}
		switch n := strings.Count(old, a.OldString); n {
		case 1:
		case 0:
			return nil, fmt.Errorf("0 matches for old_string in %s; read the file again and copy the text exactly", rel)
		default:
			return nil, fmt.Errorf("%d matches for old_string in %s; include more context so it matches once", n, rel)
		}
		if err := ws.CheckWrite(rel); err != nil {
			return nil, err
		}
		at := strings.Index(old, a.OldString)
		updated := old[:at] + a.NewString + old[at+len(a.OldString):]
		if err := commitWrite(ctx, ws, wss, rel, updated); err != nil {
			return nil, err
		}
		st.remember(ctx, rel, written(ws, rel, updated))
		first := strings.Count(old[:at], "\n") + 1
		lastLine := first + strings.Count(a.NewString, "\n")
		if a.NewString == "" || strings.HasSuffix(a.NewString, "\n") {
			lastLine--
		}
		diff, cut := undo.Diff(rel, old, updated)
		res := editResult{Path: rel, SHA256: hashOf(updated), Changed: [][2]int{{first, lastLine}}, Diff: diff}
		if cut {
			res.Truncated, res.Reason = true, "the diff is longer than its cap"
		}
		return res, nil
	}
}

// written is what the session knows of a file it just wrote.
func written(ws *sandbox.Workspace, rel, content string) seenFile {
	f := seenFile{hash: hashOf(content)}
	if file, _, err := ws.Open(rel); err == nil {
		if st, err := file.Stat(); err == nil {
			f.size, f.mtime = st.Size(), st.ModTime()
		}
		file.Close()
	}
	return f
}
