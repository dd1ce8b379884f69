package procmem

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/internal/proc"
)

func releaseStartupPages() (int64, error) {
	exe, err := proc.Exe(os.Getpid())
	if err != nil {
		return 0, fmt.Errorf("procmem: the executable: %w", err)
	}
	maps, err := proc.Mappings(os.Getpid())
	if err != nil {
		return 0, fmt.Errorf("procmem: %w", err)
	}
	var advised int64
	for _, r := range readOnlyRegions(maps, exe) {
		// MADV_DONTNEED on a private file mapping that was never
		// written drops the page table entries only: the next access
		// maps the page cache's copy again.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r.Start, r.End-r.Start, unix.MADV_DONTNEED); e != 0 {
			return advised, fmt.Errorf("procmem: madvise %#x-%#x: %w", r.Start, r.End, e)
		}
		advised += int64(r.End - r.Start)
	}
	return advised, nil
}

// readOnlyRegions returns the mappings of path that can be neither
// written nor hold private changes: "r-xp" and "r--p" with no anonymous
// or swapped page. A "rw-p" mapping may hold written pages, which
// MADV_DONTNEED would discard; so may a read-only one that was written
// before it was made read-only, such as the relocated pointers (RELRO) of
// a dynamically linked or position-independent executable (a cgo or
// -race build): smaps counts those pages as Anonymous, and such a mapping
// is left alone.
func readOnlyRegions(maps []proc.Mapping, path string) []proc.Mapping {
	var out []proc.Mapping
	for _, m := range maps {
		if m.Path == path && (m.Perms == "r-xp" || m.Perms == "r--p") && m.Anonymous == 0 && m.Swap == 0 {
			out = append(out, m)
		}
	}
	return out
}
