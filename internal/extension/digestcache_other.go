//go:build !linux

package extension

import "github.com/gemkit/gemkit/internal/fsutil"

// statKeyOf reports no key where the digest cache does not read the
// system's stat (its ctime, inode and device): every file is hashed.
func statKeyOf(*fsutil.ScanStat) (statKey, bool) { return statKey{}, false }
