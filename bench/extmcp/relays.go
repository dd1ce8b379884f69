//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/gemkit/gemkit/internal/pipeio"
)

// copier runs argv with this process's stdin and stdout copied to and
// from its own, as a proxy that does nothing else would; its exit
// status is the program's.
func copier(argv []string) int {
	c := exec.Command(argv[0], argv[1:]...)
	c.Stderr = os.Stderr
	in, err := c.StdinPipe()
	if err != nil {
		return 1
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		io.Copy(in, os.Stdin)
		in.Close()
	}()
	io.Copy(os.Stdout, out)
	if c.Wait() != nil {
		return 1
	}
	return 0
}

// buildRelay compiles testdata/relay.c with the C compiler (cc) into
// tmp.
func buildRelay(root, tmp string) (string, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", fmt.Errorf("no C compiler (cc) on PATH")
	}
	out := filepath.Join(tmp, "relay")
	src := filepath.Join(root, "bench", "extmcp", "testdata", "relay.c")
	if b, err := exec.Command(cc, "-O2", "-pthread", "-o", out, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v: %s", cc, err, b)
	}
	return out, nil
}

// pollCopier is copier with both ends in Go's poller, read and written
// with pipeio's raw system calls, as gemkit mcp reads and writes its
// client's and its server's pipes; with setsid, its child starts in a
// session of its own, as gemkit's sandbox starts a server.
func pollCopier(argv []string, setsid bool) int {
	c := exec.Command(argv[0], argv[1:]...)
	c.Stderr = os.Stderr
	if setsid {
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	pr, in, err := os.Pipe()
	if err != nil {
		return 1
	}
	c.Stdin = pr
	out, err := c.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pr.Close()
	// Its own stdin and stdout in non-blocking mode, so that os.NewFile
	// puts them in the poller (the bench's pipes, not shared).
	if syscall.SetNonblock(0, true) != nil || syscall.SetNonblock(1, true) != nil {
		return 1
	}
	stdin := pipeio.Reader(os.NewFile(0, "stdin"))
	stdout := pipeio.Writer(os.NewFile(1, "stdout"))
	srvIn := pipeio.Writer(in)
	srvOut := pipeio.Reader(out.(*os.File))
	go func() {
		io.Copy(srvIn, stdin)
		in.Close()
	}()
	io.Copy(stdout, srvOut)
	if c.Wait() != nil {
		return 1
	}
	return 0
}
