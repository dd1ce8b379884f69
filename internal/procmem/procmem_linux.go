package procmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func releaseStartupPages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("procmem: the executable: %w", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("procmem: %w", err)
	}
	regions, err := readOnlyRegions(smaps, exe)
	if err != nil {
		return 0, err
	}
	var advised int64
	for _, r := range regions {
		// MADV_DONTNEED on a private file mapping that was never
		// written drops the page table entries only: the next access
		// maps the page cache's copy again.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED); e != 0 {
			return advised, fmt.Errorf("procmem: madvise %#x-%#x: %w", r.start, r.end, e)
		}
		advised += int64(r.end - r.start)
	}
	return advised, nil
}

type region struct{ start, end uintptr }

// readOnlyRegions returns the mappings of path in a /proc/PID/smaps (or
// maps) text that can be neither written nor hold private changes: "r-xp"
// and "r--p" with no anonymous or swapped page. A "rw-p" mapping may hold
// written pages, which MADV_DONTNEED would discard; so may a read-only
// one that was written before it was made read-only, such as the
// relocated pointers (RELRO) of a dynamically linked or position-
// independent executable (a cgo or -race build): smaps counts those pages
// as Anonymous, and such a mapping is left alone.
func readOnlyRegions(smaps []byte, path string) ([]region, error) {
	var out []region
	candidate := false // the last header was a read-only mapping of path
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if strings.HasSuffix(f[0], ":") {
			// A field of the last mapping, "Anonymous:   8 kB".
			if candidate && (f[0] == "Anonymous:" || f[0] == "Swap:") && len(f) > 1 && f[1] != "0" {
				out = out[:len(out)-1]
				candidate = false
			}
			continue
		}
		// start-end perms offset dev inode path
		candidate = false
		if len(f) < 6 || strings.Join(f[5:], " ") != path {
			continue
		}
		if f[1] != "r-xp" && f[1] != "r--p" {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("procmem: unexpected maps line %q", sc.Text())
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("procmem: unexpected maps line %q", sc.Text())
		}
		out = append(out, region{uintptr(start), uintptr(end)})
		candidate = true
	}
	return out, sc.Err()
}
