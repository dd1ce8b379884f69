//go:build linux

package child

import "golang.org/x/sys/unix"

// WriteCalls are the calls of this architecture that may write a path
// (Spec.NotifyWrites). -1 for a folder argument: the working folder.
var WriteCalls = []WriteCall{
	{Nr: unix.SYS_OPENAT, Kind: WriteOpen, Dir: 0, Path: 1, Dir2: -1, Path2: -1, Flags: 2, Mode: 3},
	{Nr: unix.SYS_OPENAT2, Kind: WriteOpen2, Dir: 0, Path: 1, Dir2: -1, Path2: -1, Flags: -1, Mode: -1},
	{Nr: unix.SYS_MKDIRAT, Kind: WriteMkdir, Dir: 0, Path: 1, Dir2: -1, Path2: -1, Flags: -1, Mode: 2},
	{Nr: unix.SYS_MKNODAT, Kind: WriteMknod, Dir: 0, Path: 1, Dir2: -1, Path2: -1, Flags: -1, Mode: 2},
	{Nr: unix.SYS_SYMLINKAT, Kind: WriteSymlink, Dir: -1, Path: 0, Dir2: 1, Path2: 2, Flags: -1, Mode: -1},
	{Nr: unix.SYS_LINKAT, Kind: WriteLink, Dir: 0, Path: 1, Dir2: 2, Path2: 3, Flags: -1, Mode: -1},
	{Nr: unix.SYS_RENAMEAT, Kind: WriteRename, Dir: 0, Path: 1, Dir2: 2, Path2: 3, Flags: -1, Mode: -1},
	{Nr: unix.SYS_RENAMEAT2, Kind: WriteRename, Dir: 0, Path: 1, Dir2: 2, Path2: 3, Flags: -1, Mode: -1},
	{Nr: unix.SYS_TRUNCATE, Kind: WriteTruncate, Dir: -1, Path: 0, Dir2: -1, Path2: -1, Flags: -1, Mode: -1},
	{Nr: unix.SYS_UNLINKAT, Kind: WriteUnlink, Dir: 0, Path: 1, Dir2: -1, Path2: -1, Flags: -1, Mode: -1},
}

// SysRmdir is rmdir's number, where there is one: none here.
const SysRmdir = -1
