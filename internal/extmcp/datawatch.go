package extmcp

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// A server's data folder is bounded (extension.Widening.DataBound: 1 GiB
// unless the person raised it by name). gemkit cannot ask the kernel for
// a quota (that needs privileges and a file system that has them), so it
// holds the bound itself:
//
//   - a server whose folder already holds the bound is not started, in
//     words saying what to do;
//   - while it runs, gemkit watches the folder (inotify where the
//     kernel has it, else a look every second) and, as soon as what it
//     holds reaches the bound, stops the server and reports it, with the
//     command that raises the bound;
//   - the server cannot take disk faster than it writes: fallocate is
//     refused in its sandbox (sandbox.Policy.NoPreallocate), so the
//     watch stops it within a few milliseconds' worth of writes.

// maxDataEntries bounds a measure of a data folder: past it, what was
// counted stands for the whole.
const maxDataEntries = 500_000

// usage is the disk space the files under dir take (their blocks, not
// their sizes: a sparse file takes what it stores), looked at through a
// Root of dir, so that a link the server made is counted as a link and
// never followed, whatever it swaps during the walk. A missing folder
// holds nothing.
func usage(dir string) (int64, error) {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	defer root.Close()
	var total int64
	n := 0
	err = root.WalkDir(".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: not counted
		}
		if n++; n > maxDataEntries {
			return fs.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		total += fsutil.DiskUsage(fi)
		return nil
	})
	return total, err
}

// dataBound is the bound of the server's data folder.
func (s *server) dataBound() int64 { return s.spec.Widening.DataBound() }

// raiseCommand is the command that doubles the bound.
func (s *server) raiseCommand() string {
	return "gemkit extensions sandbox " + Printable(s.spec.Extension) + " --data-limit " + sizeArg(2*s.dataBound())
}

// sizeArg is n as --data-limit takes it.
func sizeArg(n int64) string {
	if n%(1<<30) == 0 {
		return fmt.Sprintf("%dGiB", n>>30)
	}
	return fmt.Sprintf("%dMiB", (n+(1<<20)-1)>>20)
}

// dataFull says why a server whose folder holds used is not started.
func (s *server) dataFull(data string, used int64) error {
	return fmt.Errorf("%s is not started: its data folder %s holds %s, its bound (%s); free some of it, or raise the bound: %s",
		s.who(), Printable(data), extension.Size(used), extension.Size(s.dataBound()), s.raiseCommand())
}

// watchData watches r's data folder until r exits, and stops r when the
// folder reaches the bound (see above).
func (s *server) watchData(r *running) {
	bound := s.dataBound()
	check := func() bool {
		used, err := usage(r.data)
		if err != nil || used < bound {
			return false
		}
		what := fmt.Sprintf("filled its data folder to %s, its bound (%s)", extension.Size(used), extension.Size(bound))
		r.broke.Store(&what)
		s.mu.Lock()
		if s.run == r {
			s.run = nil
		}
		s.mu.Unlock()
		r.kill()
		s.report(Refusal{At: time.Now(), Extension: s.spec.Extension, Server: s.spec.Server, Path: r.data, DataBytes: bound,
			Reason: "its data folder holds " + extension.Size(used) + ", its bound of " + extension.Size(bound) + ": gemkit stopped the server before it fills your disk",
			Allow:  s.raiseCommand()})
		return true
	}
	fsutil.WatchTree(r.data, r.exited, check)
}
