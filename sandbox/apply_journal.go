package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// An apply's journal is its plan, written to the staging directory (and synced)
// before the first step runs: a line of header, then a line per step. "complete" is
// added once every step is done and the workspace's file system synced. With the
// journal and what the steps moved to the staging directory, an apply cut short —
// the helper or turnlog killed at any point — is taken back step by step, newest
// first: each step's undo finds by the inodes the plan names whether the step ran,
// ran half, or did not run.

const (
	journalName     = "journal"
	journalComplete = "complete\n"
	journalVersion  = 1
)

// journalHeader is the journal's first line.
type journalHeader struct {
	V   int    `json:"v"`
	ID  string `json:"id"`            // in the names of the apply's temporaries
	Tag string `json:"tag,omitempty"` // the call whose result the apply is (Spec.ApplyTag)
	Ops int    `json:"ops"`
}

// writeJournal writes and syncs the journal of ops in the staging directory.
func writeJournal(stage int, h journalHeader, ops []op) (*os.File, error) {
	fd, err := unix.Openat(stage, journalName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the apply's journal: %w", err)
	}
	f := os.NewFile(uintptr(fd), journalName)
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	h.V, h.Ops = journalVersion, len(ops)
	err = enc.Encode(h)
	for i := 0; err == nil && i < len(ops); i++ {
		err = enc.Encode(&ops[i])
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = unix.Fdatasync(fd)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("the apply's journal: %w", err)
	}
	return f, nil
}

// markComplete records that every step of the journal's plan is done.
func markComplete(f *os.File) error {
	if _, err := f.WriteString(journalComplete); err != nil {
		return err
	}
	return unix.Fdatasync(int(f.Fd()))
}

// errNoJournal: the staging directory holds no journal (nothing was applied).
var errNoJournal = errors.New("no journal")

// readJournal reads the journal in the staging directory.
func readJournal(stage int) (journalHeader, []op, bool, error) {
	var h journalHeader
	fd, err := unix.Openat(stage, journalName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return h, nil, false, errNoJournal
	}
	if err != nil {
		return h, nil, false, err
	}
	f := os.NewFile(uintptr(fd), journalName)
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return h, nil, false, fmt.Errorf("the apply's journal is cut short: %w", errNoJournal)
	}
	if err := json.Unmarshal(line, &h); err != nil || h.V != journalVersion {
		return h, nil, false, fmt.Errorf("an apply's journal of an unknown version: %s", bytes.TrimSpace(line))
	}
	ops := make([]op, 0, h.Ops)
	for len(ops) < h.Ops {
		line, err := br.ReadBytes('\n')
		if err != nil {
			// Written and synced before any step ran: a journal cut short means none did.
			return h, nil, false, fmt.Errorf("the apply's journal is cut short: %w", errNoJournal)
		}
		var o op
		if err := json.Unmarshal(line, &o); err != nil {
			return h, nil, false, fmt.Errorf("an unreadable step in the apply's journal: %v", err)
		}
		ops = append(ops, o)
	}
	rest, _ := io.ReadAll(br)
	return h, ops, string(rest) == journalComplete, nil
}

// rollback undoes the plan's steps in the workspace (its root's descriptor), newest
// first, moving back what they moved to the staging directory. A step whose place
// something else took since is left undone and named in the error.
func rollback(wsRoot, stage int, id string, ops []op) error {
	ws := dirChain{root: wsRoot}
	defer ws.close()
	var errs []error
	for i := len(ops) - 1; i >= 0; i-- {
		if err := undo(&ws, stage, id, i, &ops[i]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ops[i].Rel, err))
		}
	}
	return errors.Join(errs...)
}

func undo(ws *dirChain, stage int, id string, i int, o *op) error {
	dir, name := splitRel(o.Rel)
	staged, tmp := stagedName(i), tempName(id, i)
	fd, err := ws.open(dir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) && !exists(stage, staged) {
			return nil // its directory was never made: the step never ran
		}
		return err
	}
	switch o.Kind {
	case opRemove:
		if !exists(stage, staged) {
			return nil
		}
		ws.forget(o.Rel)
		return unix.Renameat2(stage, staged, fd, name, unix.RENAME_NOREPLACE)
	case opMkdir:
		ws.forget(o.Rel)
		if err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		return nil
	case opChmod:
		if st, ok := lstatAt(fd, name); ok && st.Ino == o.OldIno {
			d, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(d)
			return unix.Fchmod(d, o.OldMode)
		}
		return nil
	case opTimes:
		if st, ok := lstatAt(fd, name); ok && o.OldIno != 0 && st.Ino == o.OldIno {
			return unix.UtimesNanoAt(fd, name, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: o.OldSec, Nsec: o.OldNs}}, unix.AT_SYMLINK_NOFOLLOW)
		}
		return nil
	case opPut, opSymlink:
		switch {
		case exists(stage, staged): // done: what it replaced is in the staging directory
			if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				return err
			}
			return unix.Renameat2(stage, staged, fd, name, unix.RENAME_NOREPLACE)
		case o.OldIno != 0:
			if st, ok := lstatAt(fd, name); ok && st.Ino == o.OldIno { // not yet exchanged
				return removeIfThere(fd, tmp)
			}
			if st, ok := lstatAt(fd, tmp); ok && st.Ino == o.OldIno { // exchanged, not yet moved
				if err := unix.Renameat2(fd, tmp, fd, name, unix.RENAME_EXCHANGE); err != nil {
					return err
				}
				return removeIfThere(fd, tmp)
			}
			return errors.New("what the apply replaced there is gone")
		default:
			if _, ok := lstatAt(fd, tmp); ok { // not yet placed
				return removeIfThere(fd, tmp)
			}
			return removeIfThere(fd, name)
		}
	}
	return fmt.Errorf("unknown step %d", o.Kind)
}

func exists(dir int, name string) bool {
	_, ok := lstatAt(dir, name)
	return ok
}

func lstatAt(dir int, name string) (unix.Stat_t, bool) {
	var st unix.Stat_t
	return st, unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

func removeIfThere(dir int, name string) error {
	if err := unix.Unlinkat(dir, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// removeTree removes name below the directory parent, and all below it, through
// descriptors (following no symlink).
func removeTree(parent int, name string) error {
	err := unix.Unlinkat(parent, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil // someone else removed it meanwhile
	}
	if err != nil {
		return err
	}
	ents, err := readDir(fd, make([]byte, 32<<10))
	for _, e := range ents {
		if err == nil {
			err = removeTree(fd, e.name)
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// Recorded says whether the tool call an apply's tag names has its result in the
// log: an apply that finished but was not yet settled when its process died is kept
// if so, and taken back if not; left as it is when the log cannot tell (an error).
type Recorded func(tag string) (bool, error)

// recoverApplies settles what applies of dead processes left in the workspace (its
// root's descriptor; the caller holds the workspace's lock): an apply cut short is
// taken back; one that finished is kept when recorded says its result was recorded,
// taken back when it says it was not, and left for a caller that can tell when
// recorded is nil. Staging directories whose owner lives (their lock is held) are
// left alone. It says what it did, one line an apply.
func recoverApplies(wsRoot int, recorded Recorded) ([]string, error) {
	own, err := unix.Openat(wsRoot, stagingDirName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("turnlog's %s: %w", stagingDirName, err)
	}
	defer unix.Close(own)
	ents, err := readDir(own, make([]byte, 16<<10))
	if err != nil {
		return nil, err
	}
	var did []string
	var errs []error
	for _, e := range ents {
		switch {
		case strings.HasPrefix(e.name, trashPrefix):
			removeTrash(own, e.name) // best effort: its owner may be removing it still
		case strings.HasPrefix(e.name, applyPrefix):
			what, err := recoverOne(wsRoot, own, e.name, recorded)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", e.name, err))
			}
			if what != "" {
				did = append(did, what)
			}
		}
	}
	unix.Unlinkat(wsRoot, stagingDirName, unix.AT_REMOVEDIR) // only when nothing is left in it
	return did, errors.Join(errs...)
}

func recoverOne(wsRoot, own int, name string, recorded Recorded) (string, error) {
	fd, err := unix.Openat(own, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return "", nil // its owner lives
	}
	h, ops, complete, err := readJournal(fd)
	switch {
	case errors.Is(err, errNoJournal):
		return "", removeTree(own, name) // nothing was applied
	case err != nil:
		return "", err
	case complete && recorded == nil:
		return "", nil
	case complete:
		kept, err := recorded(h.Tag)
		if err != nil {
			return "", fmt.Errorf("whether the result of the finished apply %s was recorded: %w", h.ID, err)
		}
		if kept {
			return fmt.Sprintf("kept the finished apply %s (%d steps): its result was recorded", h.ID, len(ops)), renameTrash(own, name, h.ID)
		}
	}
	if err := rollback(wsRoot, fd, h.ID, ops); err != nil {
		return "", fmt.Errorf("taking back the apply %s: %w", h.ID, err)
	}
	return fmt.Sprintf("took back the apply %s (%d steps), which did not finish or whose result was not recorded", h.ID, len(ops)), removeTree(own, name)
}

func renameTrash(own int, name, id string) error {
	trash := trashPrefix + id
	if err := unix.Renameat(own, name, own, trash); err != nil {
		return err
	}
	return removeTree(own, trash)
}

// journalState says whether the staging directory holds a journal (an apply began)
// and whether it is complete, reading only its end.
func journalState(stage int) (applied, complete bool, err error) {
	fd, err := unix.Openat(stage, journalName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return true, false, err
	}
	tail := make([]byte, len(journalComplete)+1)
	n, _ := unix.Pread(fd, tail, max(0, st.Size-int64(len(tail))))
	return true, n == len(tail) && string(tail[1:]) == journalComplete && tail[0] == '\n', nil
}

// removeTrash removes a settled apply's staging directory unless its owner still
// holds its lock (it is removing it in the background).
func removeTrash(own int, name string) {
	fd, err := unix.Openat(own, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return
	}
	removeTree(own, name)
}
