package procmem

import (
	"os"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/proc"
)

func TestReadOnlyRegions(t *testing.T) {
	const exe = "/usr/bin/gemkit"
	maps := []proc.Mapping{
		{Start: 0x400000, End: 0x1b42000, Perms: "r-xp", Path: exe},
		{Start: 0x1b42000, End: 0x3c22000, Perms: "r--p", Path: exe},
		{Start: 0x3c22000, End: 0x3cbd000, Perms: "rw-p", Path: exe},
		{Start: 0x3cbd000, End: 0x5d00000, Perms: "rw-p"},
		{Start: 0x7f0000000000, End: 0x7f0000001000, Perms: "r--p", Path: "/usr/lib/other.so"},
		{Start: 0x7f0000002000, End: 0x7f0000003000, Perms: "r-xp", Path: exe + " old"},
	}
	got := readOnlyRegions(maps, exe)
	if len(got) != 2 || got[0] != maps[0] || got[1] != maps[1] {
		t.Fatalf("regions = %#v, want the first two (the writable and foreign mappings left alone)", got)
	}
	// A read-only mapping holding relocated (anonymous) pages, as a cgo
	// build's RELRO does, or swapped ones, is left alone.
	maps = []proc.Mapping{
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
		t.Errorf("RssFile %d bytes before, %d after: nothing was released", before, after)
	}
}

func rssFile(t *testing.T) int64 {
	t.Helper()
	// Linux has reported RssFile since 4.5; without it nothing here could
	// show that pages were released.
	n, err := proc.StatusBytes(os.Getpid(), "RssFile")
	if err != nil {
		t.Fatal(err)
	}
	return n
}
