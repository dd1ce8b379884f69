package proc

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// readOnlyOfExecutable lists the read-only mappings of the running
// executable that hold no private (written or swapped) pages.
func readOnlyOfExecutable() ([]region, error) {
	exe, err := Exe(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("proc: the executable: %w", err)
	}
	maps, err := Mappings(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	out := []region{} // not nil: read, even when empty
	for _, m := range readOnlyRegions(maps, exe) {
		out = append(out, region{m.Start, m.End})
	}
	return out, nil
}

// advise drops the regions' pages from the resident set.
func advise(regions []region) (int64, error) {
	var advised int64
	for _, r := range regions {
		// MADV_DONTNEED on a private file mapping that was never
		// written drops the page table entries only: the next access
		// maps the page cache's copy again.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED); e != 0 {
			return advised, fmt.Errorf("proc: madvise %#x-%#x: %w", r.start, r.end, e)
		}
		advised += int64(r.end - r.start)
	}
	return advised, nil
}

func readOnlyRegions(maps []Mapping, path string) []Mapping {
	var out []Mapping
	for _, m := range maps {
		if m.Path == path && (m.Perms == "r-xp" || m.Perms == "r--p") && m.Anonymous == 0 && m.Swap == 0 {
			out = append(out, m)
		}
	}
	return out
}
