package proc

// Mapping is one memory mapping of a process, as /proc/PID/smaps (or
// maps, without the sizes) describes it.
type Mapping struct {
	Start, End uintptr
	// Perms are the permissions as the kernel writes them: "r-xp",
	// "rw-p", "r--s", …
	Perms string
	// Path is the file mapped, "" for an anonymous mapping ("[heap]"
	// and the like for the kernel's own).
	Path string
	// Anonymous and Swap are the mapping's anonymous and swapped-out
	// pages, in bytes (0 when read from maps): a read-only mapping of a
	// file with anonymous pages was written before it was made
	// read-only (the relocated pointers of a position-independent
	// executable).
	Anonymous, Swap int64
}

// Memory is what /proc/PID/smaps_rollup sums over a process's mappings.
type Memory struct {
	// RSS is the resident set; PSS shares each page among the
	// processes that map it. Both in bytes.
	RSS, PSS int64
}
