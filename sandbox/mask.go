package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/turnlog/turnlog/policy"
	"golang.org/x/sys/unix"
)

// A command may not touch some parts of its workspace, at any depth — dependency and
// build directories included:
//   - each default-deny file reads as empty (an empty read-only file is bound over it) and each
//     denied directory as an empty read-only tmpfs; a hard link to a denied file,
//     under any name, is closed the same way;
//   - every .git (a repository's directory, or the file that points to one) is bound
//     read-only over itself: git's config, hooks and pointers to other directories
//     cannot be written, and .git cannot be renamed or replaced (it is a mount point).
//
// Landlock grants the workspace as a tree; the masks close what inside it no command
// may read or change. turnlog finds them on the real workspace before it starts the
// helper (findMasks), which mounts them in its own mount namespace (applyMasks).

// Mask kinds.
const (
	maskFile = "file" // an empty read-only file over it
	maskDir  = "dir"  // an empty read-only tmpfs over it
	maskGit  = "git"  // itself, read-only
)

// Mask is one part of a workspace closed to commands.
type Mask struct {
	Rel  string `json:"rel"`
	Kind string `json:"kind"`
}

// MaskCache remembers, per directory of a workspace, what findMasks found there and
// the directory's change time: a directory whose entries did not change (its ctime —
// which, unlike the mtime, nobody can set back — did not move) is not read again, so a workspace of 50,000 files costs a stat
// per directory, not a read of every entry. The zero value is ready; one cache serves
// one workspace.
type MaskCache struct {
	mu          sync.Mutex
	dirs        map[string]cachedDir
	gitWritable bool // what the cached masks were found for
	// watch, where inotify is to be had, says which directories changed (a settled
	// one is then not even stat'ed); unwatched, the cache compares ctimes.
	watch   *watcher
	dirty   map[string]bool
	noWatch bool
}

type cachedDir struct {
	ctime   unix.Timespec // changes with every change of the directory, and no one can set it
	ino     uint64
	settled bool     // the ctime was older than timestampSlack when the directory was read
	masks   []Mask   // found in this directory itself
	subdirs []string // names of the directories walked into
	// credentialFiles are files denied only when they hold credentials
	// (policy.CredentialFile): read again every time, since their content changes
	// without their directory's — through a symlink of that name too, whose target
	// is masked then.
	credentialFiles []string
}

// timestampSlack is how old a directory's ctime must be for the cache to trust it.
const timestampSlack = 2 * time.Second

// findMasks lists the masks of the workspace at dir, reading only the directories
// that changed since cache last saw them (nil: reads them all).
//
// With gitWritable a repository's .git is not masked whole: only what of it no
// command may write (gitNeverWritable) is bound read-only.
func findMasks(dir string, cache *MaskCache, gitWritable bool) ([]Mask, error) {
	if cache == nil {
		cache = &MaskCache{}
	}
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if cache.dirs == nil || cache.gitWritable != gitWritable {
		cache.reset()
		cache.gitWritable = gitWritable
	}
	if cache.watch == nil && !cache.noWatch {
		if cache.watch = newWatcher(dir); cache.watch == nil {
			cache.noWatch = true
		}
	}
	cache.dirty = nil
	if cache.watch != nil {
		dirty, all := cache.watch.changed()
		if all {
			cache.reset()
			if cache.watch = newWatcher(dir); cache.watch == nil {
				cache.noWatch = true
			}
		}
		cache.dirty = dirty
	}
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	var out []Mask
	seen := map[string]bool{}
	if err := cache.scan(root, ".", make([]byte, 64<<10), &out, seen); err != nil {
		return nil, err
	}
	for rel := range cache.dirs {
		if !seen[rel] {
			delete(cache.dirs, rel) // gone
		}
	}
	return withLinks(dir, out)
}

// reset forgets every directory (and stops watching them).
func (c *MaskCache) reset() {
	c.dirs = map[string]cachedDir{}
	if c.watch != nil {
		c.watch.close()
		c.watch = nil
	}
}

// scan adds the masks of directory rel (relative to root) and below. A directory the
// watcher saw no change in costs nothing; unwatched, one whose change time and inode
// are what the cache holds costs one fstatat; only a changed one is opened and read
// (watched before it is read, so no change in between is missed).
func (c *MaskCache) scan(root int, rel string, buf []byte, out *[]Mask, seen map[string]bool) error {
	seen[rel] = true
	d, ok := c.dirs[rel]
	if c.watch != nil && ok && !c.dirty[rel] {
		return c.descend(root, rel, d, buf, out, seen)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(root, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil // gone, or no longer a directory: nothing of it to mask
	}
	if c.watch != nil && !c.watch.add(rel) {
		c.watch.close() // past the watch limit: compare ctimes from now on
		c.watch, c.noWatch = nil, true
	}
	if c.watch != nil || !ok || !d.settled || d.ctime != st.Ctim || d.ino != st.Ino {
		fd, err := unix.Openat(root, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return nil
		}
		entries, err := readDir(fd, buf)
		unix.Close(fd)
		if err != nil {
			return err
		}
		// A file system may stamp changes with a coarse clock: two changes within one
		// tick can leave the same ctime. Only a directory whose last change is older
		// than that is trusted unchanged next time.
		d = cachedDir{ctime: st.Ctim, ino: st.Ino, settled: time.Since(time.Unix(st.Ctim.Unix())) > timestampSlack}
		inGit, inside := insideGit(rel)
		for _, e := range entries {
			if c.gitWritable && inGit && (e.dir || e.regular) && gitProtected(path.Join(inside, e.name)) {
				if denied(path.Join(rel, e.name)) == "" && denied(path.Join(rel, e.name)+"/x") == "" {
					d.masks = append(d.masks, Mask{path.Join(rel, e.name), maskGit})
					continue // read-only, all of it
				}
			}
			if !e.dir && policy.CredentialFile(e.name) {
				d.credentialFiles = append(d.credentialFiles, e.name)
				continue
			}
			if rel == "." && e.name == stagingDirName {
				d.masks = append(d.masks, Mask{e.name, maskDir}) // turnlog's own: empty, read-only, never walked
				continue
			}
			isGit := strings.EqualFold(e.name, ".git")
			if !isGit && !policy.MayBeDenied(e.name) {
				if e.dir {
					d.subdirs = append(d.subdirs, e.name)
				}
				continue // most entries: nothing to build, nothing to check
			}
			r := path.Join(rel, e.name)
			switch {
			case e.dir && (denied(r) != "" || denied(r+"/x") != ""):
				d.masks = append(d.masks, Mask{r, maskDir}) // not walked: all of it is closed
				continue
			case e.regular && denied(r) != "":
				d.masks = append(d.masks, Mask{r, maskFile})
			case isGit && (e.dir || e.regular) && (!c.gitWritable || !e.dir):
				d.masks = append(d.masks, Mask{r, maskGit})
			}
			// A symlink is not masked: what it points to is, where that is.
			if e.dir {
				d.subdirs = append(d.subdirs, e.name)
			}
		}
		c.dirs[rel] = d
	}
	return c.descend(root, rel, d, buf, out, seen)
}

// descend adds a directory's own masks — its credential files' as they are now —
// and scans its subdirectories.
func (c *MaskCache) descend(root int, rel string, d cachedDir, buf []byte, out *[]Mask, seen map[string]bool) error {
	*out = append(*out, d.masks...)
	for _, name := range d.credentialFiles {
		r := credentialTarget(root, path.Join(rel, name))
		if r != "" && holdsCredentials(root, r, name) != "" {
			*out = append(*out, Mask{r, maskFile})
		}
	}
	for _, name := range d.subdirs {
		if err := c.scan(root, path.Join(rel, name), buf, out, seen); err != nil {
			return err
		}
	}
	return nil
}

// insideGit says whether rel lies in a .git directory, and its path there.
func insideGit(rel string) (bool, string) {
	parts := strings.Split(rel, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if strings.EqualFold(parts[i], ".git") {
			return true, strings.Join(parts[i+1:], "/")
		}
	}
	return false, ""
}

// withLinks adds a file mask for every other name of a denied file (its hard links).
// Only when a denied file has more than one name is every file's inode looked at.
func withLinks(dir string, masks []Mask) ([]Mask, error) {
	inodes := map[[2]uint64]bool{}
	for _, m := range masks {
		var st syscall.Stat_t
		switch {
		case m.Kind == maskFile && syscall.Lstat(filepath.Join(dir, m.Rel), &st) == nil && st.Nlink > 1:
			inodes[[2]uint64{st.Dev, st.Ino}] = true
		case m.Kind == maskDir:
			// Every file of a denied directory is as secret as the directory.
			filepath.WalkDir(filepath.Join(dir, m.Rel), func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && syscall.Lstat(p, &st) == nil && st.Nlink > 1 {
					inodes[[2]uint64{st.Dev, st.Ino}] = true
				}
				return nil
			})
		}
	}
	if len(inodes) == 0 {
		return masks, nil
	}
	var walk func(rel string) error
	walk = func(rel string) error {
		if rel == stagingDirName {
			return nil // turnlog's own: masked whole
		}
		fd, err := unix.Open(filepath.Join(dir, rel), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return nil
		}
		entries, err := readDir(fd, make([]byte, 64<<10))
		unix.Close(fd)
		if err != nil {
			return err
		}
		for _, e := range entries {
			r := path.Join(rel, e.name)
			if e.dir {
				if denied(r+"/x") == "" {
					if err := walk(r); err != nil {
						return err
					}
				}
				continue
			}
			var st syscall.Stat_t
			if e.regular && denied(r) == "" && syscall.Lstat(filepath.Join(dir, r), &st) == nil && st.Nlink > 1 && inodes[[2]uint64{st.Dev, st.Ino}] {
				masks = append(masks, Mask{r, maskFile})
			}
		}
		return nil
	}
	return masks, walk("")
}

// credentialHead is how much of a credential file is read for its credentials.
const credentialHead = 64 << 10

// holdsCredentials says why the file rel (below root) holds credentials, or "": its
// content says so by the rules of the credential file name (policy.CredentialFile)
// it is, or is reached as. One that cannot be read is taken to: it cannot be shown
// either.
func holdsCredentials(root int, rel, name string) string {
	fd, err := unix.Openat(root, rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
			return "" // gone, or a symlink: what it points to is checked where it is
		}
		return "may hold credentials (unreadable: " + err.Error() + ")"
	}
	defer unix.Close(fd)
	return contentCredentials(fd, name)
}

// contentCredentials is holdsCredentials for an open file.
func contentCredentials(fd int, name string) string {
	buf := make([]byte, credentialHead)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil && n <= 0 {
		return "may hold credentials (unreadable: " + err.Error() + ")"
	}
	return policy.HoldsCredentials(name, buf[:max(n, 0)])
}

// credentialTarget is the credential file rel (below root) itself, or, when it is a
// symlink, the file it resolves to inside the workspace ("" when outside, or
// nowhere: the sandbox shows nothing outside anyway).
func credentialTarget(root int, rel string) string {
	var st unix.Stat_t
	if unix.Fstatat(root, rel, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return ""
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return rel
	}
	top, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", root))
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(filepath.Join(top, rel))
	if err != nil {
		return ""
	}
	in, ok := within(top, real)
	if !ok {
		return ""
	}
	return filepath.ToSlash(in)
}
