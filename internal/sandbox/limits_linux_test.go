package sandbox

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
)

// TestSmallMemoryBound: a memory bound below what the sandbox child has
// written of its own (about 100 MB for gemkit, some 400 MB under the
// race detector) still starts the tool, gated or not. The bound
// (RLIMIT_DATA) refuses the child's every new mapping once it is set, so
// the child sets it with nothing left to allocate: here a megabyte of
// arguments to copy for the exec, which used to end the child with the
// Go runtime's (or the race detector's) "out of memory".
func TestSmallMemoryBound(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	p.MemoryBytes = 8 << 20
	arg := strings.Repeat("a", 16<<10)
	args := []string{"-c", `echo "$#"`, "sh"}
	for range 64 {
		args = append(args, arg)
	}
	for _, gated := range []bool{false, true} {
		var out, errb bytes.Buffer
		c := &Command{
			Policy: p, Path: "/bin/sh", Args: args, Dir: p.Workspace,
			Env:    []string{"PATH=/usr/bin:/bin"},
			Stdout: &out, Stderr: &errb,
		}
		if gated {
			c.Gate = func(context.Context) error { return nil }
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		proc, err := (&Launcher{}).Start(ctx, c)
		if err == nil {
			err = proc.Wait()
		}
		cancel()
		if err != nil || out.String() != "64\n" {
			t.Fatalf("gated %v: %v: %q, stderr %s", gated, err, out.String(), lastLine(errb.String()))
		}
	}
}

// TestFileSizeBound: a tool whose bound on a file's size is set writes
// no file past it, its own or one it starts, gated or not: the write
// past the bound fails, and what it wrote before stays.
func TestFileSizeBound(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	p.MaxFileBytes = 1 << 20
	for _, gated := range []bool{false, true} {
		var out, errb bytes.Buffer
		c := &Command{
			Policy: p, Path: "/bin/sh", Dir: p.Workspace,
			Args:   []string{"-c", `trap '' XFSZ; head -c 3145728 /dev/zero > big.bin; echo "exit $?"; sh -c 'trap "" XFSZ; head -c 2097152 /dev/zero > big2.bin'; wc -c < big.bin; wc -c < big2.bin`},
			Env:    []string{"PATH=/usr/bin:/bin"},
			Stdout: &out, Stderr: &errb,
		}
		if gated {
			c.Gate = func(context.Context) error { return nil }
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		proc, err := (&Launcher{}).Start(ctx, c)
		if err == nil {
			err = proc.Wait()
		}
		cancel()
		if got := strings.Fields(out.String()); err != nil || len(got) != 4 || got[1] == "0" || got[2] != "1048576" || got[3] != "1048576" {
			t.Errorf("gated %v: %v: %q, stderr %s", gated, err, out.String(), lastLine(errb.String()))
		}
	}
}
