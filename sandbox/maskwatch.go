package sandbox

import (
	"path/filepath"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watcher tells a MaskCache which directories of its workspace changed since it last
// asked, through inotify: with it, finding a settled workspace's masks reads nothing
// from the disk at all, however many files it holds. A directory renamed (paths
// shift), or a queue that overflowed, says everything changed.
type watcher struct {
	fd   int
	root string
	rels map[int32]string // watch → directory, relative to root
	wds  map[string]int32
	buf  []byte
}

const watchEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// maxWatchers caps the inotify instances this process takes (one per workspace): a
// user has 128 by default, shared with every other program running as that user;
// workspaces past the cap compare ctimes.
const maxWatchers = 32

var watchers atomic.Int32 // inotify instances open (process-wide, like the limit)

// newWatcher watches nothing yet; nil where inotify is not to be had, or the cap is
// reached.
func newWatcher(root string) *watcher {
	if watchers.Add(1) > maxWatchers {
		watchers.Add(-1)
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		watchers.Add(-1)
		return nil
	}
	return &watcher{fd: fd, root: root, rels: map[int32]string{}, wds: map[string]int32{}, buf: make([]byte, 64<<10)}
}

// add watches directory rel; false if it cannot (the watch limit), and the caller
// gives up watching.
func (w *watcher) add(rel string) bool {
	if _, ok := w.wds[rel]; ok {
		return true
	}
	wd, err := unix.InotifyAddWatch(w.fd, filepath.Join(w.root, rel), watchEvents)
	if err != nil {
		return err == unix.ENOENT || err == unix.ENOTDIR // gone already: nothing to watch
	}
	w.rels[int32(wd)] = rel
	w.wds[rel] = int32(wd)
	return true
}

// changed drains what happened since the last call: the directories whose entries
// changed, or all when paths may have shifted or events were lost.
func (w *watcher) changed() (dirty map[string]bool, all bool) {
	dirty = map[string]bool{}
	for {
		n, err := unix.Read(w.fd, w.buf)
		if err == unix.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			return dirty, all // EAGAIN: nothing more queued
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				all = true
			case ev.Mask&(unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 && ev.Mask&unix.IN_ISDIR != 0, ev.Mask&unix.IN_MOVE_SELF != 0:
				all = true // a directory moved: the paths of everything under it changed
			case ev.Mask&unix.IN_IGNORED != 0:
				if rel, ok := w.rels[ev.Wd]; ok {
					delete(w.wds, rel)
					delete(w.rels, ev.Wd)
				}
			default:
				if rel, ok := w.rels[ev.Wd]; ok {
					dirty[rel] = true
				}
			}
		}
	}
}

func (w *watcher) close() {
	unix.Close(w.fd)
	watchers.Add(-1)
}
