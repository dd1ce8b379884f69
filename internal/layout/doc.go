// Package layout holds no code: its tests check the shape of the tree
// that reviews would otherwise check by eye, so that a change which
// breaks it fails where it is made.
//
// The floors: every folder of packages is convex, meaning no chain of
// imports leaves a folder and comes back into it. So ide/, the
// protocol's types and the agents table that the whole tree imports,
// stays the floor (nothing in it reaches up to the companion, the client
// or the sandbox), and a room such as companion/ or internal/sandbox/
// is one floor that the others stand on or beside, never around.
//
// The rooms: no function in internal/sandbox (its child and netproxy
// included) is over 100 lines, so that each step of a launch has a name
// (TestSandboxFunctionsShort).
//
// The rooms' size: no non-test Go file is over 600 lines
// (TestFilesShort), so that a file holds one thing and a reader finds
// the one a change touches; internal/cli, the commands' flags and
// words, holds under 7,500 lines in all (TestCLIShort).
//
// One name per fact: gemkit's folders and the agents' are spelled in one
// place each (TestOneNamePerFact), and /proc's files are read and parsed
// in internal/proc alone (TestProcReadInProc).
//
// One home per fact: what every sandboxed process's profile needs (an
// environment as a map, a path's real name, program search, the private
// folder rule, the runtime folder, a socket's peer, the closed inputs
// and their temporary folders, gemkit's folders in /tmp) is written in
// one function, and no other function of the tree has its code
// (TestOneHomePerFact); the hooks' and the installs' packages reach
// neither langserver nor lspbroker (TestNoBorrowedRooms).
package layout
