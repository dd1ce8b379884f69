//go:build !unix

package permission

import "io/fs"

// ownedByMe is true where files have no Unix owner to check: the folders
// asked about are the user's own profile's.
func ownedByMe(fs.FileInfo) bool { return true }

// privateToMe is true for a folder where permissions are not Unix modes
// (the profile's folders are private to the user by their ACLs).
func privateToMe(fi fs.FileInfo) bool { return fi.IsDir() }

// fileID is unknown where files have no device and inode: handed
// credentials are a sandbox's, which runs on Linux only.
func fileID(fs.FileInfo) (dev, ino uint64, uid int) { return 0, 0, -1 }
