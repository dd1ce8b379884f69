package fsutil

import (
	"errors"
	"strings"
	"testing"
)

// The files of /proc are regular and of size 0, whatever they hold:
// ReadFile reads them whole, and still within its limit.
func TestRootReadProcFile(t *testing.T) {
	r, err := OpenRoot("/proc/self")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := r.ReadFile("status", 0)
	if err != nil || !strings.Contains(string(data), "\nVmRSS:") {
		t.Fatalf("read /proc/self/status: %v\n%s", err, data)
	}
	if _, err := r.ReadFile("status", 64); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("read /proc/self/status within 64 bytes: %v, want ErrTooLarge", err)
	}
}
