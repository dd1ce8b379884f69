package pkgrun

import (
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// What an install may write is bounded while npm writes, not once it
// wrote it: a tree consent could not bind (extension.MaxContentBytes,
// MaxContentFiles) is refused, and the disk it would have taken is not
// taken first. gemkit cannot ask the kernel for a quota on a folder
// (that needs privileges and a file system that has them), so it holds
// the bound with what the sandbox gives and a watch of its own:
//
//   - every file a process of the install writes is bounded by the
//     kernel (sandbox.Policy.MaxFileBytes, RLIMIT_FSIZE): a tarball or a
//     file of it larger than the bound is cut there, whatever npm meant;
//   - fallocate is refused (sandbox.Policy.NoPreallocate), so what the
//     install takes grows only as fast as it writes;
//   - gemkit measures the tree being staged and the growth of npm's
//     cache while npm runs, and stops npm as soon as a file reaches the
//     bound, the tree's files pass it (or MaxContentFiles), or the cache
//     grew by more than it: a tarball that expands a hundredfold is
//     stopped within a look's worth of writes (minLook, or four times
//     what the last look took, for a large tree).
//
// After npm, inspect refuses a tree past the bound, as consent would.

// DefaultMaxBytes bounds what an install writes: the tree's files
// together, each file of it and of npm's cache, and what the cache
// grows by. It is what consent binds of a folder.
const DefaultMaxBytes = extension.MaxContentBytes

// DefaultMaxFiles bounds the files of a tree, as consent does.
const DefaultMaxFiles = extension.MaxContentFiles

// minLook is the shortest time between two looks at what an install
// wrote.
const minLook = 100 * time.Millisecond

func (in *Installer) maxBytes() int64 {
	if in.MaxBytes > 0 {
		return in.MaxBytes
	}
	return DefaultMaxBytes
}

func (in *Installer) maxFiles() int {
	if in.MaxFiles > 0 {
		return in.MaxFiles
	}
	return DefaultMaxFiles
}

// writeBound holds one run of npm to what it may write: the tree being
// staged and, when not "", npm's cache, which held cacheWas bytes when
// the run began.
type writeBound struct {
	max          int64
	files        int
	stage, cache string
	cacheWas     int64

	mu  sync.Mutex
	why string
}

func newWriteBound(max int64, files int, stage, cache string) *writeBound {
	b := &writeBound{max: max, files: files, stage: stage, cache: cache}
	if cache != "" {
		b.cacheWas = measure(cache, max).bytes
	}
	return b
}

// exceeded says why npm was stopped, "" when it was not.
func (b *writeBound) exceeded() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.why
}

// watch looks at what the run wrote until exited is closed, and calls
// stop once it passed the bound (exceeded then says how).
func (b *writeBound) watch(exited <-chan struct{}, stop func()) {
	for {
		began := time.Now()
		if why := b.check(); why != "" {
			b.mu.Lock()
			b.why = why
			b.mu.Unlock()
			stop()
			return
		}
		t := time.NewTimer(max(minLook, 4*time.Since(began)))
		select {
		case <-exited:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// check says how the run passed the bound, "" when it did not.
func (b *writeBound) check() string {
	stopped := fmt.Sprintf(", so gemkit stopped it while it wrote: a package this large is not one gemkit pins (an install may write %s and %d files)", Size(b.max), b.files)
	tree := measure(b.stage, b.max)
	switch {
	case tree.largest >= b.max:
		return fmt.Sprintf("npm was writing more than the %s an install may write: the file %s reached it%s", Size(b.max), printable(tree.largestName), stopped)
	case tree.bytes > b.max:
		return fmt.Sprintf("npm was writing more than the %s an install may write: the tree's files came to %s%s", Size(b.max), Size(tree.bytes), stopped)
	case tree.files > b.files:
		return fmt.Sprintf("npm was writing more than the %d files a tree may hold%s", b.files, stopped)
	}
	if b.cache == "" {
		return ""
	}
	cache := measure(b.cache, b.max)
	switch {
	case cache.largest >= b.max:
		return fmt.Sprintf("npm was writing more than the %s an install may write: a file of its cache (a tarball) reached it%s", Size(b.max), stopped)
	case cache.bytes-b.cacheWas > b.max:
		return fmt.Sprintf("npm was writing more than the %s an install may write: its cache grew by %s%s", Size(b.max), Size(cache.bytes-b.cacheWas), stopped)
	}
	return ""
}

// written is what a folder holds: its regular files' sizes together,
// how many, and the largest.
type written struct {
	bytes, largest int64
	files          int
	largestName    string
}

// measure is what dir holds, looked at through its Root (links counted
// as links, never followed); a folder that cannot be read (renamed by
// npm meanwhile) is left out until the next look. It stops early once
// the bytes are past twice limit: more would say nothing more.
func measure(dir string, limit int64) written {
	var w written
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return w
	}
	defer root.Close()
	root.WalkReadable(".", func(_ *fsutil.Root, name string, d fs.DirEntry) error {
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		w.files++
		w.bytes += fi.Size()
		if fi.Size() > w.largest {
			w.largest, w.largestName = fi.Size(), name
		}
		if w.bytes > 2*limit {
			return fs.SkipAll
		}
		return nil
	})
	return w
}
