package workspacetools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
)

// commitWrite writes content to the file asked of ws (where it really lands, through
// symlinks inside the workspace; the caller holds its lock) as
// an apply lands a command's writes: through the sandbox's executor, whole or not at
// all, with the directories it needs; what it replaces is kept until the call's
// result is durable (a crash before then takes the write back at the next start),
// and what it changed is recorded with the call (FilesChanged) under wss's undo
// caps, below its root. A file it replaces keeps its mode and owner; a new one is 0644,
// turnlog's.
func commitWrite(ctx context.Context, ws *sandbox.Workspace, wss *Workspaces, asked, content string) error {
	rel, err := ws.RealRel(asked) // through symlinks inside the workspace, as an open would go
	if err != nil {
		return err
	}
	if _, err := ws.WritableRel(rel); err != nil {
		return err
	}
	if err := ws.CheckWrite(rel); err != nil {
		return err
	}
	now := time.Now().UnixNano()
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	slash := filepath.ToSlash(rel)
	var rs []sandbox.Restore
	parts := strings.Split(slash, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		fi, err := os.Lstat(filepath.Join(ws.Dir(), dir))
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			return &sandbox.PathError{Path: rel, Reason: dir + " is not a directory"}
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		rs = append(rs, sandbox.Restore{Path: dir, Want: &sandbox.EntryState{Kind: sandbox.EntryDir, Mode: 0o755, UID: uid, GID: gid, MtimeNs: now}})
	}
	want := &sandbox.EntryState{Kind: sandbox.EntryFile, Mode: 0o644, UID: uid, GID: gid, MtimeNs: now, Size: int64(len(content))}
	r := sandbox.Restore{Path: slash, Want: want, Content: []byte(content)}
	fi, err := os.Lstat(filepath.Join(ws.Dir(), rel))
	switch {
	case err == nil && fi.Mode().IsRegular():
		st := fi.Sys().(*syscall.Stat_t)
		want.Mode, want.UID, want.GID = uint32(fi.Mode().Perm())|setBits(fi.Mode()), st.Uid, st.Gid
		r.Expect = &sandbox.EntryState{Kind: sandbox.EntryFile, Mode: want.Mode, UID: st.Uid, GID: st.Gid, Size: fi.Size()}
		if r.ExpectHash, err = fileHash(filepath.Join(ws.Dir(), rel)); err != nil {
			return err
		}
	case err == nil:
		return &sandbox.PathError{Path: rel, Reason: "is not a regular file"}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	call, _ := fsm.CallInfoFrom(ctx)
	res, conflicts, err := sandbox.WriteFiles(ws.Dir(), ApplyTag(call), append(rs, r))
	if err != nil {
		return err
	}
	if res == nil {
		if len(conflicts) > 0 {
			return fmt.Errorf("%s changed while it was written", rel)
		}
		return nil
	}
	if err := recordApply(ctx, res, wss.Root().Dir(), ws.Dir(), wss.UndoCaps()); err != nil {
		res.SettleHeld(false)
		return fmt.Errorf("the write was taken back, as what it changed could not be recorded: %w", err)
	}
	// The engine settles it once the result is durable, after this tool returned
	// and let the lock go — or at once, here, if the result is decided already.
	var inside atomic.Bool
	inside.Store(true)
	defer inside.Store(false)
	if !fsm.OnRecorded(ctx, func(recorded bool) {
		if inside.Load() {
			res.SettleHeld(recorded)
		} else {
			res.Settle(recorded)
		}
	}) {
		res.SettleHeld(true)
	}
	return nil
}

func setBits(m fs.FileMode) uint32 {
	var b uint32
	if m&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}

// fileHash is the content hash of the file at p, as the undo log names it.
func fileHash(p string) (string, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
