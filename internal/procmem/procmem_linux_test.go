package procmem

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestReadOnlyRegions(t *testing.T) {
	const maps = `00400000-01b42000 r-xp 00000000 fe:00 10019251                           /usr/bin/gemkit
01b42000-03c22000 r--p 01742000 fe:00 10019251                           /usr/bin/gemkit
03c22000-03cbd000 rw-p 03822000 fe:00 10019251                           /usr/bin/gemkit
03cbd000-05d00000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 fe:00 77                         /usr/lib/other.so
7f0000002000-7f0000003000 r-xp 00000000 fe:00 78                         /usr/bin/gemkit old
`
	got, err := readOnlyRegions([]byte(maps), "/usr/bin/gemkit")
	if err != nil {
		t.Fatal(err)
	}
	want := []region{{0x400000, 0x1b42000}, {0x1b42000, 0x3c22000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("regions = %#v, want %#v (the writable and foreign mappings left alone)", got, want)
	}
	// smaps: a read-only mapping holding relocated (anonymous) pages, as
	// a cgo build's RELRO does, is left alone.
	const smaps = `00400000-01b42000 r-xp 00000000 fe:00 10019251                           /usr/bin/gemkit
Size:              24840 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me
01b42000-03c22000 r--p 01742000 fe:00 10019251                           /usr/bin/gemkit
Size:              33664 kB
Anonymous:            12 kB
Swap:                  0 kB
VmFlags: rd mr mw me ac
03c22000-03c23000 r--p 03822000 fe:00 10019251                           /usr/bin/gemkit
Anonymous:             0 kB
Swap:                  4 kB
`
	got, err = readOnlyRegions([]byte(smaps), "/usr/bin/gemkit")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (region{0x400000, 0x1b42000}) {
		t.Fatalf("regions = %#v, want only the code (mappings with written or swapped pages left alone)", got)
	}
	if _, err := readOnlyRegions([]byte("zz-yy r-xp 0 0:0 1 /usr/bin/gemkit\n"), "/usr/bin/gemkit"); err == nil {
		t.Fatal("a malformed line was accepted")
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
		t.Errorf("RssFile %d kB before, %d kB after: nothing was released", before, after)
	}
}

func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			kb, err := strconv.Atoi(strings.Fields(v)[0])
			if err != nil {
				t.Fatalf("status line %q: %v", l, err)
			}
			return kb
		}
	}
	// Linux has reported RssFile since 4.5; without it nothing here could
	// show that pages were released.
	t.Fatalf("no RssFile line in /proc/self/status:\n%s", b)
	return 0
}
