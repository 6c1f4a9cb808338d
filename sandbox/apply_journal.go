package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
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

// progressName is the file the executor appends a line to after each step: its
// index, the inode of what it placed and, for a file whose content it copied whole,
// that content's hash. A rollback takes back only the steps it names, and the one
// after (which may have run in part); it removes only an entry that is still what
// the step placed.
const progressName = "progress"

// openProgress makes the apply's progress file in the staging directory.
func openProgress(stage int) (*os.File, error) {
	fd, err := unix.Openat(stage, progressName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the apply's progress: %w", err)
	}
	return os.NewFile(uintptr(fd), progressName), nil
}

// placement is what a step placed, as its progress line says: the inode, and the
// hash of a file's content as the step copied it ("": none was copied whole).
type placement struct {
	ino  uint64
	hash string
}

// readProgress says how many steps ran to their end (the first so many), and what
// each placed.
func readProgress(stage int) (int, []placement) {
	fd, err := unix.Openat(stage, progressName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, nil
	}
	f := os.NewFile(uintptr(fd), progressName)
	defer f.Close()
	var placed []placement
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p, ok := parseProgress(sc.Text(), len(placed))
		if !ok {
			break // a line cut short by a kill: that step counts as not ended
		}
		placed = append(placed, p)
	}
	return len(placed), placed
}

// parseProgress reads the progress line of step i.
func parseProgress(line string, i int) (placement, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || len(f) > 3 || f[0] != strconv.Itoa(i) {
		return placement{}, false
	}
	ino, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return placement{}, false
	}
	p := placement{ino: ino}
	if len(f) == 3 {
		hex, ok := strings.CutPrefix(f[2], "sha256:")
		if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
			return placement{}, false
		}
		p.hash = f[2]
	}
	return p, true
}

// rollback takes the plan's steps back in the workspace (its root's descriptor),
// newest first, moving back what they moved to the staging directory: the steps
// the progress file says ended, and the one after, which may have run in part. A
// step whose place something else took since is left as it is — what it had moved
// aside stays in the staging directory — and named among the conflicts; err is
// what could not be done for another reason.
func rollback(wsRoot, stage int, id string, ops []op) (conflicts []string, err error) {
	done, placed := readProgress(stage)
	ws := dirChain{root: wsRoot}
	defer ws.close()
	var errs []error
	for i := min(done, len(ops)-1); i >= 0; i-- {
		var ino uint64
		if i < done {
			ino = placed[i].ino
		}
		conflict, err := undo(&ws, stage, id, i, &ops[i], i < done, ino)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ops[i].Rel, err))
		}
		if conflict != "" {
			conflicts = append(conflicts, ops[i].Rel+": "+conflict)
		}
	}
	return conflicts, errors.Join(errs...)
}

// undo takes op i back: one that ended (placed: the inode of what it placed), or
// the one that may have run in part, found out by the state it left.
func undo(ws *dirChain, stage int, id string, i int, o *op, ended bool, placed uint64) (conflict string, err error) {
	dir, name := splitRel(o.Rel)
	staged, tmp := stagedName(i), tempName(id, i)
	fd, err := ws.open(dir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			if !ended && !exists(stage, staged) {
				return "", nil // its directory is not there: it never ran
			}
			return "its directory is not what the apply left there", nil
		}
		return "", err
	}
	switch o.Kind {
	case opRemove:
		if !exists(stage, staged) {
			if ended {
				return "what it moved aside is gone", nil
			}
			return "", nil
		}
		ws.forget(o.Rel)
		if err := unix.Renameat2(stage, staged, fd, name, unix.RENAME_NOREPLACE); errors.Is(err, unix.EEXIST) {
			return "something else is there now", nil
		} else if err != nil {
			return "", err
		}
		return "", nil
	case opMkdir:
		st, there := lstatAt(fd, name)
		if !there || ended && st.Ino != placed {
			if ended && there {
				return "something else is there now", nil
			}
			return "", nil
		}
		ws.forget(o.Rel)
		if err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			return "something was put in the directory since", nil
		} else if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			return "", err
		}
		return "", nil
	case opChmod:
		if st, ok := lstatAt(fd, name); ok && st.Ino == o.OldIno {
			d, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return "", err
			}
			defer unix.Close(d)
			return "", unix.Fchmod(d, o.OldMode)
		}
		return "", nil
	case opTimes:
		if st, ok := lstatAt(fd, name); ok && o.OldIno != 0 && st.Ino == o.OldIno {
			return "", unix.UtimesNanoAt(fd, name, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: o.OldSec, Nsec: o.OldNs}}, unix.AT_SYMLINK_NOFOLLOW)
		}
		return "", nil
	case opPut, opSymlink:
		if ended {
			return undoPlaced(fd, stage, name, staged, o, placed)
		}
		return undoPart(fd, stage, name, staged, tmp, o)
	}
	return "", fmt.Errorf("unknown step %d", o.Kind)
}

// undoPlaced takes back a put or link that ended: what it placed goes, if it is
// still there, and what it replaced comes back.
func undoPlaced(fd, stage int, name, staged string, o *op, placed uint64) (string, error) {
	if st, ok := lstatAt(fd, name); ok {
		if st.Ino != placed {
			return "something else is there now", nil
		}
		if err := removeIfThere(fd, name); err != nil {
			return "", err
		}
	}
	if o.OldIno == 0 {
		return "", nil
	}
	if !exists(stage, staged) {
		return "what it replaced is gone from the staging directory", nil
	}
	return "", unix.Renameat2(stage, staged, fd, name, unix.RENAME_NOREPLACE)
}

// undoPart takes back a put or link that may have run in part, by the state it
// left: its temporary made, exchanged, or moved on.
func undoPart(fd, stage int, name, staged, tmp string, o *op) (string, error) {
	switch {
	case exists(stage, staged): // done: what it replaced is in the staging directory
		if err := removeIfThere(fd, name); err != nil {
			return "", err
		}
		return "", unix.Renameat2(stage, staged, fd, name, unix.RENAME_NOREPLACE)
	case o.OldIno != 0:
		if st, ok := lstatAt(fd, name); ok && st.Ino == o.OldIno { // not yet exchanged
			return "", removeIfThere(fd, tmp)
		}
		if st, ok := lstatAt(fd, tmp); ok && st.Ino == o.OldIno { // exchanged, not yet moved
			if err := unix.Renameat2(fd, tmp, fd, name, unix.RENAME_EXCHANGE); err != nil {
				return "", err
			}
			return "", removeIfThere(fd, tmp)
		}
		return "what the apply replaced there is gone", nil
	default:
		if _, ok := lstatAt(fd, tmp); ok { // not yet placed
			return "", removeIfThere(fd, tmp)
		}
		// Written where it goes, by this very step, under the workspace's lock.
		return "", removeIfThere(fd, name)
	}
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
	// Newest first: a later apply's steps are taken back before an earlier one's.
	ctime := func(name string) int64 {
		st, _ := lstatAt(own, name)
		return st.Ctim.Sec*1e9 + st.Ctim.Nsec
	}
	sort.SliceStable(ents, func(i, j int) bool { return ctime(ents[i].name) > ctime(ents[j].name) })
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
	conflicts, err := rollback(wsRoot, fd, h.ID, ops)
	if err != nil {
		return "", fmt.Errorf("taking back the apply %s: %w", h.ID, err)
	}
	if len(conflicts) > 0 {
		return fmt.Sprintf("took back the apply %s but for %d paths changed since (%s); what it had replaced there is kept in %s/%s%s",
			h.ID, len(conflicts), strings.Join(conflicts[:min(len(conflicts), 5)], "; "), stagingDirName, leftPrefix, h.ID), keepLeft(own, name, h.ID)
	}
	return fmt.Sprintf("took back the apply %s (%d steps), which did not finish or whose result was not recorded", h.ID, len(ops)), removeTree(own, name)
}

// leftPrefix names what a rollback could not put back: kept for a person, never
// recovered again.
const leftPrefix = "left-"

// keepLeft sets a taken-back apply's staging directory aside as left-<id>.
func keepLeft(own int, name, id string) error {
	unix.Unlinkat(own, name+"/"+journalName, 0)
	return unix.Renameat(own, name, own, leftPrefix+id)
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
