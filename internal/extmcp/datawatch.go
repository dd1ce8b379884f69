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

// dataLimit is the bound of a server's data folder, and how gemkit
// holds it (see above).
type dataLimit struct {
	ext   string // the extension, whose servers share the folder
	bound int64
}

// dataLimit is the bound of s's data folder.
func (s *server) dataLimit() dataLimit {
	return dataLimit{ext: s.spec.Extension, bound: s.spec.Widening.DataBound()}
}

// raiseCommand is the command that doubles the bound.
func (d dataLimit) raiseCommand() string {
	return "gemkit extensions sandbox " + Printable(d.ext) + " --data-limit " + sizeArg(2*d.bound)
}

// sizeArg is n as --data-limit takes it.
func sizeArg(n int64) string {
	if n%(1<<30) == 0 {
		return fmt.Sprintf("%dGiB", n>>30)
	}
	return fmt.Sprintf("%dMiB", (n+(1<<20)-1)>>20)
}

// full says why the server who, whose folder data holds used, is not
// started; nil when used is under the bound.
func (d dataLimit) full(who, data string, used int64) error {
	if used < d.bound {
		return nil
	}
	return fmt.Errorf("%s is not started: its data folder %s holds %s, its bound (%s); free some of it, or raise the bound: %s",
		who, Printable(data), extension.Size(used), extension.Size(d.bound), d.raiseCommand())
}

// watch watches the data folder data until exited is closed; when what
// it holds reaches the bound, it calls stop with what the server did,
// then report with the refusal to report.
func (d dataLimit) watch(data string, exited <-chan struct{}, stop func(what string), report func(Refusal)) {
	check := func() bool {
		used, err := usage(data)
		if err != nil || used < d.bound {
			return false
		}
		stop(fmt.Sprintf("filled its data folder to %s, its bound (%s)", extension.Size(used), extension.Size(d.bound)))
		report(Refusal{At: time.Now(), Extension: d.ext, Path: data, DataBytes: d.bound,
			Reason: "its data folder holds " + extension.Size(used) + ", its bound of " + extension.Size(d.bound) + ": gemkit stopped the server before it fills your disk",
			Allow:  d.raiseCommand()})
		return true
	}
	fsutil.WatchTree(data, exited, check)
}

// watchData watches r's data folder until r exits, and stops r when the
// folder reaches the bound.
func (s *server) watchData(r *running) {
	s.dataLimit().watch(r.data, r.exited, func(what string) { s.stopRun(r, what) }, func(rf Refusal) {
		rf.Server = s.spec.Server
		s.report(rf)
	})
}
