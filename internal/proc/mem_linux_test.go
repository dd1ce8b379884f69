package proc

import (
	"os"
	"strings"
	"testing"
)

func TestReadOnlyRegions(t *testing.T) {
	const exe = "/usr/bin/gemkit"
	maps := []Mapping{
		{Start: 0x400000, End: 0x1b42000, Perms: "r-xp", Path: exe},
		{Start: 0x1b42000, End: 0x3c22000, Perms: "r--p", Path: exe},
		{Start: 0x3c22000, End: 0x3cbd000, Perms: "rw-p", Path: exe},
		{Start: 0x3cbd000, End: 0x5d00000, Perms: "rw-p"},
		{Start: 0x7f000000, End: 0x7f001000, Perms: "r--p", Path: "/usr/lib/other.so"},
		{Start: 0x7f002000, End: 0x7f003000, Perms: "r-xp", Path: exe + " old"},
	}
	got := readOnlyRegions(maps, exe)
	if len(got) != 2 || got[0] != maps[0] || got[1] != maps[1] {
		t.Fatalf("regions = %#v, want the first two (the writable and foreign mappings left alone)", got)
	}
	// A read-only mapping holding relocated (anonymous) pages, as a cgo
	// build's RELRO does, or swapped ones, is left alone.
	maps = []Mapping{
		{Start: 0x400000, End: 0x1b42000, Perms: "r-xp", Path: exe},
		{Start: 0x1b42000, End: 0x3c22000, Perms: "r--p", Path: exe, Anonymous: 12 << 10},
		{Start: 0x3c22000, End: 0x3c23000, Perms: "r--p", Path: exe, Swap: 4 << 10},
	}
	if got := readOnlyRegions(maps, exe); len(got) != 1 || got[0] != maps[0] {
		t.Fatalf("regions = %#v, want only the code (mappings with written or swapped pages left alone)", got)
	}
}

// TestReleaseStartupPages releases this test binary's read-only pages and
// goes on running: code and tables come back on use, and the writable
// mapping (Go's globals) keeps its values.
func TestReleaseStartupPages(t *testing.T) {
	global := strings.Repeat("kept", 4)
	before := rssFile(t)
	n, err := ReleaseStartupPages()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no mapping of the executable was released")
	}
	after := rssFile(t)
	if global != "keptkeptkeptkept" {
		t.Fatal("a value changed")
	}
	if after >= before {
		t.Errorf("RssFile+RssShmem %d bytes before, %d after: nothing was released", before, after)
	}
}

func rssFile(t *testing.T) int64 {
	t.Helper()
	// Linux has reported RssFile since 4.5; without it nothing here could
	// show that pages were released. An executable on a tmpfs (go test's
	// work folder where /tmp is one) has its pages counted as RssShmem
	// instead: the two together are the mapped files' resident pages.
	var sum int64
	for _, field := range []string{"RssFile", "RssShmem"} {
		n, err := StatusBytes(os.Getpid(), field)
		if err != nil {
			t.Fatal(err)
		}
		sum += n
	}
	return sum
}

// TestPagesReleasesAgain: a Pages releases the same mappings each time,
// read once: the pages touched since the last release leave the resident
// set again.
func TestPagesReleasesAgain(t *testing.T) {
	var p Pages
	first, err := p.Release()
	if err != nil || first == 0 {
		t.Fatalf("first Release = %d, %v; want the executable's read-only mappings", first, err)
	}
	// Touch code and tables the first release dropped: by running some,
	// and all of them by reading each page of the mappings (through
	// /proc/self/mem, which maps a page it reads as the process's own
	// access would). Running code alone brought back less than what the
	// test's own path to the next count faults in again when the race
	// detector's runtime and a collection fall in between (CI's command
	// here, once: 3,670,016 bytes before, 4,128,768 after).
	var b strings.Builder
	for i := range 1000 {
		b.WriteString(strings.ToUpper(strings.Repeat("x", i%7)))
	}
	_ = b.String()
	touchPages(t, p.regions)
	before := rssFile(t)
	again, err := p.Release()
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("second Release advised %d bytes, the first %d: the mappings were not the ones read once", again, first)
	}
	after := rssFile(t)
	t.Logf("RssFile+RssShmem: %d bytes with every page touched, %d after the second release", before, after)
	if after >= before {
		t.Errorf("RssFile+RssShmem %d bytes before the second release, %d after: nothing was released", before, after)
	}
}

// BenchmarkReleaseStartupPages reads the mappings (smaps) at each release;
// BenchmarkPagesRelease, a companion's releases after a change of
// clients, reads them once.
func BenchmarkReleaseStartupPages(b *testing.B) {
	for b.Loop() {
		if _, err := ReleaseStartupPages(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPagesRelease(b *testing.B) {
	var p Pages
	for b.Loop() {
		if _, err := p.Release(); err != nil {
			b.Fatal(err)
		}
	}
}

// touchPages reads one byte of each page of regions, through
// /proc/self/mem, so that every page is resident again.
func touchPages(t *testing.T, regions []region) {
	t.Helper()
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	page := uintptr(os.Getpagesize())
	var one [1]byte
	for _, r := range regions {
		for a := r.start; a < r.end; a += page {
			if _, err := mem.ReadAt(one[:], int64(a)); err != nil {
				t.Fatalf("reading %#x of /proc/self/mem: %v", a, err)
			}
		}
	}
}
