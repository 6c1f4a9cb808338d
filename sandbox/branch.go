package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A branch of a session whose workspace is its own starts with the files of the
// session it was branched from as they were at the branch point: a copy of that
// workspace as it is now, taken under its lock once no apply of it waits to be
// settled (so everything the copy holds is in the source's log), with the changes
// its log recorded after the point restored onto the copy. The copy is made in a
// directory of its own next to the new workspace, locked while it is made (one a
// dead process left is removed at the next start: RemoveBranchCopies), and renamed
// into place whole: the new workspace exists complete or not at all.

// BranchPrefix starts the name of a branch copy being made, next to the workspace
// it becomes.
const BranchPrefix = ".branch-"

// ErrBranchMade says BranchWorkspace found the new workspace made already (by
// another call or process): the copy it made was dropped.
var ErrBranchMade = errors.New("the branch's workspace was made meanwhile")

// settleWait bounds how long a branch copy waits for the source's applies to be
// settled (each is milliseconds: its result's append).
const settleWait = 30 * time.Second

// branchWaiting, when set (tests), is called each time a branch copy waits.
var branchWaiting func()

// BranchWorkspace makes dst, which must not exist, the workspace src holds (none:
// an empty one) with the restores plan returns forced onto it. plan is called
// after the copy is taken: what it reads of the source's log covers every change
// the copy holds. dst gets 0700.
func BranchWorkspace(ctx context.Context, src, dst string, plan func() ([]Restore, error)) error {
	var buf [8]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(dst), BranchPrefix+filepath.Base(dst)+"-"+hex.EncodeToString(buf[:]))
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	// Held while the copy is made: a copy whose lock is free is a dead process's.
	unlockTmp, err := lockDir(tmp)
	if err != nil {
		os.Remove(tmp)
		return err
	}
	defer unlockTmp()
	done := false
	defer func() {
		if !done {
			removeCopy(tmp)
		}
	}()
	if err := copySettled(ctx, src, tmp); err != nil {
		return err
	}
	rs, err := plan()
	if err != nil {
		return err
	}
	if len(rs) > 0 {
		res, _, err := restoreFiles(tmp, "", rs, true, false) // its lock is held: the copy's own
		if err != nil {
			return fmt.Errorf("restoring the branch point's files: %w", err)
		}
		if err := res.SettleHeld(true); err != nil {
			return err
		}
	}
	fd, err := unix.Open(tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	err = unix.Syncfs(fd)
	unix.Close(fd)
	if err != nil {
		return err
	}
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) { // a file system without RENAME_NOREPLACE
		if _, serr := os.Lstat(dst); serr == nil {
			err = unix.EEXIST
		} else {
			err = os.Rename(tmp, dst)
		}
	}
	if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
		return ErrBranchMade
	}
	if err != nil {
		return err
	}
	done = true
	return syncDir(filepath.Dir(dst))
}

// RemoveBranchCopies removes the branch copies dead processes left in dir (the
// folder the workspaces are made in): names starting BranchPrefix whose lock
// nobody holds. It says how many it removed.
func RemoveBranchCopies(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), BranchPrefix) || !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone meanwhile
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			unix.Close(fd)
			continue // a copy being made by a live process
		}
		err = removeCopy(p)
		unix.Close(fd)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// removeCopy removes a branch copy, its read-only directories too (made writable
// first: a process that is not root may not empty them otherwise).
func removeCopy(dir string) error {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o700 != 0o700 {
				os.Chmod(p, fi.Mode().Perm()|0o700)
			}
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// copySettled copies src into dst under src's lock, once no apply there waits to
// be settled.
func copySettled(ctx context.Context, src, dst string) error {
	if _, err := os.Lstat(src); os.IsNotExist(err) {
		return nil
	}
	deadline := time.Now().Add(settleWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		unlock, err := lockDir(src)
		if err != nil {
			return err
		}
		pending, err := applyUnsettled(src)
		if err == nil && !pending {
			err = copyTree(ctx, src, dst)
			unlock()
			return err
		}
		unlock()
		if err != nil {
			return err
		}
		if branchWaiting != nil {
			branchWaiting()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("an apply of %s has waited over %s for its result to be recorded (a process that died leaves it to the next start's recovery): the branch's files are copied once it is settled", src, settleWait)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// applyUnsettled says whether an apply of the workspace dir is done and waits to
// be settled: its changes are there and its record may not be in the log yet. The
// caller holds the lock (no apply runs).
func applyUnsettled(dir string) (bool, error) {
	own, err := unix.Open(filepath.Join(dir, stagingDirName), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(own)
	ents, err := readDir(own, make([]byte, 16<<10))
	if errors.Is(err, unix.ENOENT) {
		return false, nil // the last settle removed it, empty, since it was opened
	}
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.name, applyPrefix) {
			continue
		}
		fd, err := unix.Openat(own, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // settled meanwhile
		}
		applied, _, err := journalState(fd)
		unix.Close(fd)
		if err != nil || applied {
			return true, err
		}
	}
	return false, nil
}

// copyTree copies the workspace src into the empty directory dst: files, symlinks
// and directories with their modes, owners (when this process may set them) and
// modification times; turnlog's .turnlog is left out, other kinds of file too. It
// never follows a symlink.
func copyTree(ctx context.Context, src, dst string) error {
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return copyDir(ctx, sfd, dfd, "", make([]byte, 64<<10))
}

func copyDir(ctx context.Context, sfd, dfd int, rel string, buf []byte) error {
	ents, err := readDir(sfd, buf)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	for _, e := range ents {
		if rel == "" && e.name == stagingDirName {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := copyEntry(ctx, sfd, dfd, e.name, path.Join(rel, e.name), buf); err != nil {
			return err
		}
	}
	return nil
}

func copyEntry(ctx context.Context, sfd, dfd int, name, rel string, buf []byte) error {
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		sub, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		defer unix.Close(sub)
		dsub, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		defer unix.Close(dsub)
		if err := copyDir(ctx, sub, dsub, rel, buf); err != nil {
			return err
		}
		return copyAttrs(dfd, name, &st, rel) // after its entries: their making moved its mtime
	case unix.S_IFREG:
		return copyFile(sfd, dfd, name, rel, &st)
	case unix.S_IFLNK:
		target := make([]byte, st.Size+1)
		n, err := unix.Readlinkat(sfd, name, target)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if err := unix.Symlinkat(string(target[:n]), dfd, name); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return copyAttrs(dfd, name, &st, rel)
	}
	return nil // a device, socket or pipe: never a workspace's file
}

func copyFile(sfd, dfd int, name, rel string, st *unix.Stat_t) error {
	in, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	src := os.NewFile(uintptr(in), rel)
	defer src.Close()
	var opened unix.Stat_t
	if err := unix.Fstat(in, &opened); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	if opened.Mode&unix.S_IFMT != unix.S_IFREG || opened.Ino != st.Ino || opened.Dev != st.Dev {
		return fmt.Errorf("%s changed while it was copied", rel)
	}
	out, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	dst := os.NewFile(uintptr(out), rel)
	_, err = io.Copy(dst, src) // copy_file_range: a reflink where the file system has them
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	return copyAttrs(dfd, name, st, rel)
}

// copyAttrs gives the entry name of the directory fd st's owner, mode and times.
func copyAttrs(fd int, name string, st *unix.Stat_t, rel string) error {
	if err := unix.Fchownat(fd, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%s: %w", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err := unix.Fchmodat(fd, name, st.Mode&0o7777, 0); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
	}
	if err := unix.UtimesNanoAt(fd, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsync(fd)
}
