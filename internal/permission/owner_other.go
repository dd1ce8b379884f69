//go:build !unix

package permission

import "io/fs"

// ownedByMe is true where files have no Unix owner to check: the folders
// asked about are the user's own profile's.
func ownedByMe(fs.FileInfo) bool { return true }

// privateToMe is true for a folder where permissions are not Unix modes
// (the profile's folders are private to the user by their ACLs).
func privateToMe(fi fs.FileInfo) bool { return fi.IsDir() }
