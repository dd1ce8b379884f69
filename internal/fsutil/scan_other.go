//go:build !linux

package fsutil

import (
	"io/fs"
	"os"
	"path"
)

// ScanDir is a folder of a Scan, open while its entries are visited.
type ScanDir struct{ r *Root }

// Path is the path of the entry name of the folder, for messages.
func (d *ScanDir) Path(name string) string { return d.r.Path(name) }

// OpenStat opens the regular file name of the folder for reading, as
// Root.OpenStat does, and returns the descriptor's stat.
func (d *ScanDir) OpenStat(name string) (*os.File, ScanStat, error) {
	f, fi, err := d.r.OpenStat(name)
	if err != nil {
		return nil, ScanStat{}, err
	}
	return f, scanStatOfInfo(fi), nil
}

// Readlink is the target of the link name of the folder, as written.
func (d *ScanDir) Readlink(name string) (string, error) { return d.r.Readlink(name) }

// scan is WalkConcurrent where getdents64 is not at hand.
func (r *Root) scan(workers int, fn ScanFunc) error {
	return r.WalkConcurrent(".", workers, func(dir *Root, rel string, d fs.DirEntry) error {
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := scanStatOfInfo(fi)
		return fn(&ScanDir{dir}, path.Clean(rel), &st)
	})
}

// scanStatOfInfo is what Scan tells of fi.
func scanStatOfInfo(fi fs.FileInfo) ScanStat {
	// Without the device, inode and change time: a digest cache is
	// not used here (statKeyOf in internal/extension).
	return ScanStat{Mode: fi.Mode(), Size: fi.Size(), Nlink: LinkCount(fi), Mtim: fi.ModTime().UnixNano()}
}
