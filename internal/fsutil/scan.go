package fsutil

import (
	"io/fs"
	"os"
)

// ScanStat is what Scan tells of an entry: its lstat, taken beneath the
// folder that listed it, the link itself for a link.
type ScanStat struct {
	Mode       fs.FileMode
	Size       int64
	Dev, Ino   uint64
	Nlink      uint64
	Mtim, Ctim int64 // nanoseconds since the epoch
}

// ScanFunc is called by Scan for each entry below the folder scanned:
// dir is the folder holding it, held open during the call, rel the
// entry's slash path from the folder scanned, st its lstat. Returning
// fs.SkipDir for a folder leaves it out; any other error ends the scan.
type ScanFunc func(dir *ScanDir, rel string, st *ScanStat) error

// Scan visits every entry of the tree of r, folders included (a folder
// before what it holds), with up to workers goroutines at once, in no
// particular order: fn must be safe for concurrent use. It is Walk for a
// tree whose every entry is looked at and few are opened (a consent
// check whose digest cache is warm): on Linux each folder is listed
// with getdents64 and each entry stat'd with fstatat beneath the
// folder's own descriptor, with no allocation but its name, where a
// Walk pays for os.Root's resolution, a sorted listing and a FileInfo
// per entry. Each folder is opened beneath the one that listed it,
// never through a link, and checked to be the folder listed (a folder
// swapped meanwhile is ErrChanged); links are reported, never followed.
func (r *Root) Scan(workers int, fn ScanFunc) error { return r.scan(max(workers, 1), fn) }

// OpenScanStat is OpenStat with the descriptor's stat as Scan tells one.
func (r *Root) OpenScanStat(name string) (*os.File, ScanStat, error) {
	f, fi, err := r.OpenStat(name)
	if err != nil {
		return nil, ScanStat{}, err
	}
	return f, scanStatOfInfo(fi), nil
}
