package fsutil

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Restat stats again, without listing any folder, a tree whose entries
// the caller knows from an earlier Scan: it holds open the folders on
// the way to the current one, each opened beneath the one before it,
// never through a link (as Scan opens them), and stats an entry beneath
// its folder's descriptor (fstatat, no link followed). A caller that
// visits the folders and their entries in Scan's path order (a folder's
// whole subtree at once) opens each folder once. Not safe for
// concurrent use: each goroutine takes its own.
type Restat struct {
	r     *Root
	stack []restatDir // the folder of the Root first
	name  []byte      // the name being stat'd, NUL-terminated
}

type restatDir struct {
	rel string // "" for the folder of the Root
	fd  int
}

// Restat begins a Restat of r's tree; Close ends it.
func (r *Root) Restat() (*Restat, error) {
	top, err := r.r.Open(".")
	if err != nil {
		return nil, r.wrap("open", ".", err)
	}
	defer top.Close()
	var fd int
	var derr error
	if err := withFd(top, func(f int) { fd, derr = unix.Dup(f) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, r.wrap("open", ".", derr)
	}
	unix.CloseOnExec(fd)
	return &Restat{r: r, stack: []restatDir{{fd: fd}}}, nil
}

// Close closes the folders it holds.
func (s *Restat) Close() {
	for _, d := range s.stack {
		unix.Close(d.fd)
	}
	s.stack = nil
}

// Dir makes the folder rel (a slash path from the Root's folder, "" for
// that folder itself) the current one, and returns its descriptor's
// stat: the folders held that do not lead to it are closed, and the
// ones missing on the way opened. A link or anything but a folder on
// the way is ErrChanged.
func (s *Restat) Dir(rel string) (ScanStat, error) {
	if err := s.enter(rel); err != nil {
		return ScanStat{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(s.top().fd, &st); err != nil {
		return ScanStat{}, &fs.PathError{Op: "stat", Path: s.r.Path(rel), Err: err}
	}
	return scanStatOf(&st), nil
}

// Lstat is the lstat of the entry name of the folder dir (as Dir takes
// it), taken beneath dir's descriptor.
func (s *Restat) Lstat(dir, name string) (ScanStat, error) {
	if err := s.enter(dir); err != nil {
		return ScanStat{}, err
	}
	if name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 || strings.IndexByte(name, 0) >= 0 {
		return ScanStat{}, &fs.PathError{Op: "lstat", Path: s.r.Path(path.Join(dir, name)), Err: fs.ErrInvalid}
	}
	s.name = append(append(s.name[:0], name...), 0)
	var st unix.Stat_t
	if err := fstatatName(s.top().fd, s.name, &st); err != nil {
		return ScanStat{}, &fs.PathError{Op: "lstat", Path: s.r.Path(path.Join(dir, name)), Err: err}
	}
	return scanStatOf(&st), nil
}

func (s *Restat) top() *restatDir { return &s.stack[len(s.stack)-1] }

// enter makes rel the folder on top of the stack.
func (s *Restat) enter(rel string) error {
	if len(s.stack) == 0 {
		return errors.New("fsutil: Restat used after Close")
	}
	if s.top().rel == rel {
		return nil
	}
	// Close what does not lead to rel.
	for len(s.stack) > 1 {
		t := s.top().rel
		if strings.HasPrefix(rel, t) && len(rel) > len(t) && rel[len(t)] == '/' {
			break
		}
		unix.Close(s.top().fd)
		s.stack = s.stack[:len(s.stack)-1]
	}
	// Open the rest, one name at a time.
	for s.top().rel != rel {
		t := s.top().rel
		rest := rel
		if t != "" {
			rest = rel[len(t)+1:]
		}
		name, _, _ := strings.Cut(rest, "/")
		next := name
		if t != "" {
			next = t + "/" + name
		}
		if name == "" || name == "." || name == ".." {
			return &fs.PathError{Op: "open", Path: s.r.Path(rel), Err: fs.ErrInvalid}
		}
		fd, err := unix.Openat(s.top().fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				err = ErrChanged
			}
			return &fs.PathError{Op: "open", Path: s.r.Path(next), Err: err}
		}
		s.stack = append(s.stack, restatDir{rel: next, fd: fd})
	}
	return nil
}
