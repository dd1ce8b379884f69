// Package peercred reads who is at the other end of a Unix socket, as
// the kernel took it when that process connected or listened: the one
// reading of socket credentials in gemkit. Package proc checks its
// sockets' peers with it (PeerUID, SameUser), and `gemkit extensions
// hook`'s warm client (package hookclient) checks its server's before
// the rest of gemkit initializes: on Linux the package imports syscall
// alone, no package that Go initializes late (see hookclient's init).
package peercred

// Cred is a peer's credentials: its user, and its process where the
// system says which (-1 where it does not).
type Cred struct {
	UID, PID int
}
