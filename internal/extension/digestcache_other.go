//go:build !linux

package extension

import "io/fs"

// statKeyOf reports no key where the digest cache does not read the
// system's stat (its ctime, inode and device): every file is hashed.
func statKeyOf(fs.FileInfo) (statKey, bool) { return statKey{}, false }
