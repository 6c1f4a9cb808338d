package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Each command that may write its workspace gets a staging directory there before it
// starts: <workspace>/.turnlog/apply-<id>, on the workspace's own file system (so
// that whatever the apply replaces or removes is moved there by a rename, never
// copied), made and locked (flock) by turnlog, which hands the helper a descriptor of
// it — the lock is shared with the helper and lives as long as either holds it. The
// apply writes its journal there. The directory goes once the call's result is
// durable (Result.Settle); a staging directory nobody holds the lock of is a dead
// process's, recovered by the next apply or start (recoverApplies).
//
// .turnlog at the top of a workspace is turnlog's own: commands see it as an empty
// read-only directory, the file tools refuse it, a plan never changes it. It exists
// only while a command runs or an apply waits to be settled.

const (
	stagingDirName = ".turnlog"
	applyPrefix    = "apply-"
	trashPrefix    = "trash-"
	// bigStaging is how many moved entries make Settle remove them in the
	// background.
	bigStaging = 1000
)

// staging is one command's staging directory, from turnlog's side.
type staging struct {
	ws    *os.File // the workspace
	own   *os.File // its .turnlog
	dir   *os.File // .turnlog/apply-<id>, locked
	id    string
	since unix.Timespec // the file system's clock when it was made

	mu      sync.Mutex
	settled bool
	moved   int // entries the apply moved here
	// groups, when set, is the command's cgroup, given back once this is settled:
	// giving it back reclaims its page cache, which holds what the apply replaced
	// as the command read it — what the undo log reads before the apply is settled.
	groups *cgroupTree
}

// giveBackGroups hands the command's cgroup back to the pool, once; s.mu is held.
func (s *staging) giveBackGroups() {
	if s.groups != nil {
		cgroupPool.giveBack(s.groups)
		s.groups = nil
	}
}

// openStaging makes a staging directory in workspace and takes its lock.
func openStaging(workspace string) (*staging, error) {
	wsfd, err := unix.Open(workspace, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	s := &staging{ws: os.NewFile(uintptr(wsfd), workspace)}
	if err := s.open(); err != nil {
		s.close()
		return nil, fmt.Errorf("%s/%s, turnlog's staging directory: %w", workspace, stagingDirName, err)
	}
	return s, nil
}

func (s *staging) open() error {
	wsfd := int(s.ws.Fd())
	var wst unix.Stat_t
	if err := unix.Fstat(wsfd, &wst); err != nil {
		return err
	}
	// Another command's settle removes .turnlog once it is empty, and a recovery
	// removes a staging directory nobody holds the lock of: either may catch this
	// one between its making and its locking. Then again, under a new name.
	const tries = 100
	for try := 1; ; try++ {
		err := s.make(wsfd, wst.Dev)
		if err == nil {
			return nil
		}
		if s.dir != nil {
			s.dir.Close()
			s.dir = nil
		}
		if s.own != nil {
			s.own.Close()
			s.own = nil
		}
		if !errors.Is(err, errRaced) || try == tries {
			return err
		}
	}
}

// errRaced: the staging directory went while it was being made.
var errRaced = errors.New("removed while it was made")

// make makes and locks one staging directory under a new name.
func (s *staging) make(wsfd int, dev uint64) error {
	var b [6]byte
	rand.Read(b[:])
	s.id = hex.EncodeToString(b[:])
	name := applyPrefix + s.id
	if err := unix.Mkdirat(wsfd, stagingDirName, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	own, err := unix.Openat(wsfd, stagingDirName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return errRaced
	}
	if err != nil {
		return fmt.Errorf("not a directory of turnlog's: %w", err)
	}
	s.own = os.NewFile(uintptr(own), stagingDirName)
	var st unix.Stat_t
	if err := unix.Fstat(own, &st); err != nil {
		return err
	}
	if st.Dev != dev || st.Uid != uint32(os.Geteuid()) {
		return errors.New("it lies on another file system, or belongs to someone else")
	}
	if err := unix.Mkdirat(own, name, 0o700); errors.Is(err, unix.ENOENT) {
		return errRaced
	} else if err != nil {
		return err
	}
	dir, err := unix.Openat(own, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return errRaced
	}
	if err != nil {
		return err
	}
	s.dir = os.NewFile(uintptr(dir), name)
	if err := unix.Flock(dir, unix.LOCK_EX); err != nil {
		return err
	}
	// Locked: nobody removes it from now on; but it must still be the one there.
	var mine, there unix.Stat_t
	if err := unix.Fstat(dir, &mine); err != nil {
		return err
	}
	if err := unix.Fstatat(own, name, &there, unix.AT_SYMLINK_NOFOLLOW); err != nil || there.Ino != mine.Ino {
		return errRaced
	}
	// The directory's change time, read, then changed again: on a file system with
	// fine-grained timestamps the second change takes one finer than any before it
	// (a query asks for that), so every entry changed after this moment has a change
	// time not before it, and every one changed before, an earlier one.
	if err := unix.Fchmod(dir, 0o700); err != nil {
		return err
	}
	if err := unix.Fstat(dir, &mine); err != nil {
		return err
	}
	s.since = mine.Ctim
	return nil
}

// handOff is descriptors of the workspace and of the staging directory for the
// helper, on turnlog's mounts: the staging directory's the same open file (so its
// lock is shared), the workspace's a new one (the lock the helper takes on it must
// end with the helper).
func (s *staging) handOff() (ws, dir *os.File, err error) {
	wfd, err := unix.Openat(int(s.ws.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	ws = os.NewFile(uintptr(wfd), s.ws.Name())
	if dir, err = dupFile(s.dir); err != nil {
		ws.Close()
		return nil, nil, err
	}
	return ws, dir, nil
}

// settle ends the staging directory once the apply's result is durable (recorded),
// or takes the apply back (not recorded: the call's result never reached the log).
func (s *staging) settle(recorded bool) error { return s.settleAs(recorded, false) }

// settleAs is settle; held says the caller holds the workspace's lock.
func (s *staging) settleAs(recorded, held bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settled {
		return nil
	}
	s.settled = true
	defer s.giveBackGroups()
	if !recorded {
		if _, err := s.rollback(held); err != nil {
			s.close() // its lock let go: the next apply or start tries again
			return err
		}
	}
	return s.discard()
}

// abandon ends a staging directory whose apply did not land, for a caller that holds
// the workspace's lock: gone when no journal is left in it (nothing to take back),
// else let go of for the next start's recovery to take back.
func (s *staging) abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settled {
		return
	}
	s.settled = true
	defer s.giveBackGroups()
	if applied, _, err := journalState(int(s.dir.Fd())); err == nil && !applied {
		s.discard()
		return
	}
	s.close()
}

// rollback takes the apply back under the workspace's lock (held: the caller holds it); the journal goes once
// it is. What could not be put back, because its place changed since, is kept as
// .turnlog/left-<id> (its conflicts are returned).
func (s *staging) rollback(held bool) ([]string, error) {
	h, ops, _, err := readJournal(int(s.dir.Fd()))
	if errors.Is(err, errNoJournal) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !held {
		unlock, err := lockDir(s.ws.Name())
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	conflicts, err := rollback(int(s.ws.Fd()), int(s.dir.Fd()), h.ID, ops)
	if err != nil {
		return nil, err
	}
	if len(conflicts) > 0 {
		return conflicts, keepLeft(int(s.own.Fd()), applyPrefix+s.id, s.id)
	}
	return nil, unix.Unlinkat(int(s.dir.Fd()), journalName, 0)
}

// discard removes the staging directory: at once when it holds little, else renamed
// out of the way (no recovery takes it for an apply then) and removed in the
// background.
func (s *staging) discard() error {
	own, name := int(s.own.Fd()), applyPrefix+s.id
	// The journal first: a crash in the middle leaves nothing a recovery would take
	// for an apply to take back with half of what it replaced.
	if err := unix.Unlinkat(int(s.dir.Fd()), journalName, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		s.close()
		return err
	}
	if s.moved < bigStaging {
		err := removeTree(own, name)
		s.close()
		return err
	}
	trash := trashPrefix + s.id
	if err := unix.Renameat(own, name, own, trash); err != nil {
		s.close()
		return err
	}
	go func() {
		removeTree(own, trash)
		s.close()
	}()
	return nil
}

// close lets go of the staging directory (and its lock), and of .turnlog when it is
// empty.
func (s *staging) close() {
	if s.dir != nil {
		s.dir.Close()
	}
	if s.own != nil {
		s.own.Close()
		unix.Unlinkat(int(s.ws.Fd()), stagingDirName, unix.AT_REMOVEDIR)
	}
	s.ws.Close()
}

// lockDir takes the lock of the workspace at dir, which every writer of it holds:
// applies (in the helper), the file tools and reverts — flock on the directory, so
// it holds between processes (serve and turnlog run on one folder). unlock lets go.
func lockDir(dir string) (unlock func(), err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock the workspace %s: %w", dir, err)
	}
	return func() { unix.Close(fd) }, nil
}

// RecoverApplies settles what applies of dead processes left in the workspace dir
// (see recoverApplies), under its lock: turnlog calls it at start for every
// workspace it serves, with recorded asking the log. It says what it did.
func RecoverApplies(dir string, recorded Recorded) ([]string, error) {
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return recoverApplies(fd, recorded)
}
