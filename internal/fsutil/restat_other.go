//go:build !linux

package fsutil

import "errors"

// Restat stats again a tree known from an earlier Scan (Linux only:
// elsewhere Scan reports no device, inode or change time to compare).
type Restat struct{}

// Restat is unsupported here: a caller reads the tree again.
func (r *Root) Restat() (*Restat, error) {
	return nil, errors.ErrUnsupported
}

// Close does nothing.
func (s *Restat) Close() {}

// Dir is unsupported here.
func (s *Restat) Dir(rel string) (ScanStat, error) { return ScanStat{}, errors.ErrUnsupported }

// Lstat is unsupported here.
func (s *Restat) Lstat(dir, name string) (ScanStat, error) { return ScanStat{}, errors.ErrUnsupported }
