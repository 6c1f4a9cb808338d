package workspacetools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

// Scope says whose a workspace is.
type Scope = fsm.WorkspaceScope

const (
	// ScopeUser (the default): each user of the app has a workspace of their own,
	// <root>/users/<user>; no user's agent sees another's files.
	ScopeUser = fsm.WorkspaceUser
	// ScopeSession: each session has one, <root>/sessions/<session>; a branch's is
	// made at its first tool call with its source's files as at the branch point
	// (fsm's Branch).
	ScopeSession = fsm.WorkspaceSession
	// ScopeShared: the root itself, one for every user and session of the app — only
	// when the config says so (a team's repository; turnlog run's own folder).
	ScopeShared = fsm.WorkspaceShared
)

// Scopes lists the scopes.
var Scopes = []Scope{ScopeUser, ScopeSession, ScopeShared}

// Workspaces gives each tool call the workspace it works in: by its session's user,
// by its session, or one for all, under a root the operator chose. A workspace is
// made (0700) the first time it is needed.
type Workspaces struct {
	root  *sandbox.Workspace
	scope Scope
	homes string // where each workspace's commands get a HOME of their own ("": none kept)

	mu     sync.Mutex
	open   map[string]*sandbox.Workspace
	caches map[string]*sandbox.MaskCache // by workspace directory
	made   map[string]bool               // homes made, by directory
	seen   []*seen                       // what the file tools' sessions read
	undo   *UndoCaps                     // nil: DefaultUndoCaps
}

// NewWorkspaces opens root (which must exist) for scope.
func NewWorkspaces(root string, scope Scope) (*Workspaces, error) {
	ws, err := sandbox.OpenWorkspace(root)
	if err != nil {
		return nil, err
	}
	return &Workspaces{root: ws, scope: scope, open: map[string]*sandbox.Workspace{}, caches: map[string]*sandbox.MaskCache{}}, nil
}

// Shared is the one workspace dir for every call (turnlog run's, tests').
func Shared(ws *sandbox.Workspace) *Workspaces {
	return &Workspaces{root: ws, scope: ScopeShared, caches: map[string]*sandbox.MaskCache{}}
}

// MaskCache is what the sandbox remembers of a workspace's directories between
// commands (see sandbox.MaskCache), one per workspace.
func (w *Workspaces) MaskCache(ws *sandbox.Workspace) *sandbox.MaskCache {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.caches[ws.Dir()]
	if !ok {
		c = &sandbox.MaskCache{}
		w.caches[ws.Dir()] = c
	}
	return c
}

// KeepHomes gives each workspace's commands a HOME of their own below dir, kept
// between commands like a stdio server's data (outside every workspace: a
// repository's dotfiles are never user configuration).
func (w *Workspaces) KeepHomes(dir string) { w.homes = dir }

// Home is the HOME of the commands of ws, made the first time (see KeepHomes); ""
// when none is kept (each command gets an empty one).
func (w *Workspaces) Home(ws *sandbox.Workspace) (string, error) {
	if w.homes == "" {
		return "", nil
	}
	dir := w.homeOf(ws.Dir())
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.made[dir] {
		if err := sandbox.PrepareDataDir(dir); err != nil {
			return "", fmt.Errorf("the commands' home %s: %w", dir, err)
		}
		if w.made == nil {
			w.made = map[string]bool{}
		}
		w.made[dir] = true
	}
	return dir, nil
}

// homeOf is where the commands of the workspace at dir keep their HOME ("": none
// kept).
func (w *Workspaces) homeOf(dir string) string {
	if w.homes == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(w.homes, filepath.Base(dir)+"-"+hex.EncodeToString(sum[:8]))
}

// SetUndoCaps bounds what the undo log keeps of the workspaces' changes.
func (w *Workspaces) SetUndoCaps(c UndoCaps) { w.undo = &c }

// UndoCaps bound what the undo log keeps of the workspaces' changes.
func (w *Workspaces) UndoCaps() UndoCaps {
	if w.undo == nil {
		return DefaultUndoCaps
	}
	return *w.undo
}

// Root is the directory the workspaces are made under (for shared, the workspace).
func (w *Workspaces) Root() *sandbox.Workspace { return w.root }

// Scope is whose each workspace is.
func (w *Workspaces) Scope() Scope { return w.scope }

// For is the workspace of the call ctx carries.
func (w *Workspaces) For(ctx context.Context) (*sandbox.Workspace, error) {
	if w.scope == ScopeShared {
		return w.root, nil
	}
	call, _ := fsm.CallInfoFrom(ctx)
	rel, err := w.relOf(call.Session, call.User)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ws, ok := w.open[rel]; ok {
		return ws, nil
	}
	if err := os.MkdirAll(filepath.Join(w.root.Dir(), filepath.Dir(rel)), 0o700); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(w.root.Dir(), rel), 0o700); err != nil && !os.IsExist(err) {
		return nil, err
	}
	ws, err := sandbox.OpenWorkspace(filepath.Join(w.root.Dir(), rel))
	if err != nil {
		return nil, err
	}
	if ws.Dir() != filepath.Join(w.root.Dir(), rel) { // a symlink planted in the root
		ws.Close()
		return nil, fmt.Errorf("workspace %s is not a directory of its own", rel)
	}
	w.open[rel] = ws
	return ws, nil
}

// relOf is the folder below the root of the workspace of session of user ("" for
// the shared scope's, the root).
func (w *Workspaces) relOf(session, user string) (string, error) {
	switch w.scope {
	case ScopeShared:
		return "", nil
	case ScopeUser:
		if user == "" {
			return "", fmt.Errorf("no user for a per-user workspace")
		}
		return filepath.Join("users", pathName(user)), nil
	}
	if session == "" {
		return "", fmt.Errorf("no session for a per-session workspace")
	}
	return filepath.Join("sessions", pathName(session)), nil
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// pathName is a user or session id as one path component: itself when it is a plain
// name, else a hash of it (no id can name another's directory or climb out).
func pathName(id string) string {
	if plainName.MatchString(id) && !strings.HasPrefix(id, "h-") {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "h-" + hex.EncodeToString(sum[:12])
}

// Recover settles what applies of dead processes left in every workspace made
// under the root (see sandbox.RecoverApplies): an apply that did not finish, or
// whose result recorded says never reached the log, is taken back. It says what it
// did, and what it could not.
func (w *Workspaces) Recover(recorded sandbox.Recorded) ([]string, error) {
	var did []string
	var errs []error
	if n, err := sandbox.RemoveBranchCopies(filepath.Join(w.root.Dir(), "sessions")); n > 0 || err != nil {
		did = append(did, fmt.Sprintf("removed %d branch copies left unfinished", n))
		errs = append(errs, err)
	}
	for _, d := range w.dirs() {
		if _, err := os.Lstat(filepath.Join(d, ".turnlog")); err != nil {
			continue // the common case: nothing was left
		}
		lines, err := sandbox.RecoverApplies(d, recorded)
		for _, l := range lines {
			did = append(did, d+": "+l)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
		}
	}
	return did, errors.Join(errs...)
}

// dirs are the workspaces made under the root so far: the root itself, and for
// the per-user and per-session scopes each folder of users/ and sessions/.
func (w *Workspaces) dirs() []string {
	dirs := []string{w.root.Dir()}
	if w.scope == ScopeShared {
		return dirs
	}
	for _, sub := range []string{"users", "sessions"} {
		entries, err := os.ReadDir(filepath.Join(w.root.Dir(), sub))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && e.Type()&os.ModeSymlink == 0 && !strings.HasPrefix(e.Name(), sandbox.BranchPrefix) {
				dirs = append(dirs, filepath.Join(w.root.Dir(), sub, e.Name()))
			}
		}
	}
	return dirs
}

// CommittedSecrets lists, by workspace, the files its git history holds that the
// default-deny list masks: their contents stay readable through git's objects (git
// show HEAD:.env) to any command the policy allows. git runs in the sandbox, the
// workspace read-only, so nothing of a repository's can act on the host. spec is the
// app's sandbox.
func (w *Workspaces) CommittedSecrets(ctx context.Context, spec sandbox.Spec) (map[string][]string, error) {
	out := map[string][]string{}
	var errs []error
	for _, d := range w.dirs() {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err != nil {
			continue
		}
		files, err := committedSecrets(ctx, spec, d)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
			continue
		}
		if len(files) > 0 {
			out[d] = files
		}
	}
	return out, errors.Join(errs...)
}

// committedSecrets is CommittedSecrets for one workspace.
func committedSecrets(ctx context.Context, spec sandbox.Spec, dir string) ([]string, error) {
	spec.Workspace, spec.WorkspaceReadOnly, spec.Network, spec.AllowHost = dir, true, false, nil
	spec.MaskCache, spec.Home = nil, ""
	spec.Timeout, spec.OutputBytes = time.Minute, 16<<20
	res, err := sandbox.Run(ctx, spec, "git log --all --format= --name-only --no-renames -z")
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("git log: exit %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	seen := map[string]bool{}
	var files []string
	for _, name := range strings.Split(res.Stdout, "\x00") {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] || policy.DeniedBy(name) == "" {
			continue
		}
		seen[name] = true
		files = append(files, name)
	}
	sort.Strings(files)
	return files, nil
}
