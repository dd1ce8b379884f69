package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a real pseudo-terminal pair, so the consent prompt can be
// tested the way a person meets it: stdin is a terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

func TestConsentPromptOnTerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		answer    string
		installed bool
	}{{"n\n", false}, {"\n", false}, {"y\n", true}, {"YES\n", true}} {
		e := newEnv(t)
		master, slave := openPTY(t)
		if _, err := master.Write([]byte(tc.answer)); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{"extensions", "--home", e.home, "--workspace", e.ws, "install", "testdata/extensions/code-analyzer"},
			Streams{In: slave, Out: &out, Err: &errb})
		if !strings.Contains(errb.String(), "Do you want to continue? [y/N]") || !strings.Contains(errb.String(), "read files in your workspace") {
			t.Errorf("answer %q: no prompt with the permissions:\n%s", tc.answer, errb.String())
		}
		_, statErr := os.Stat(filepath.Join(e.home, ".gemini", "extensions", "code-analyzer"))
		if got := statErr == nil; got != tc.installed || (code == ExitOK) != tc.installed {
			t.Errorf("answer %q: installed %v, exit %d; want installed %v\n%s", tc.answer, got, code, tc.installed, errb.String())
		}
		if !tc.installed && !strings.Contains(errb.String(), "consent refused") {
			t.Errorf("answer %q: refusal not explained:\n%s", tc.answer, errb.String())
		}
	}
}

// TestGitProgressOnTerminal checks that a person at a terminal sees git's
// own progress while a repository is cloned.
func TestGitProgressOnTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, url := gitRepoOf(t, "testdata/extensions/code-analyzer")
	master, slave := openPTY(t)
	if _, err := master.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"extensions", "--home", e.home, "--workspace", e.ws, "install", url},
		Streams{In: slave, Out: &out, Err: &errb})
	if code != ExitOK {
		t.Fatalf("install: exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "Receiving objects") {
		t.Errorf("no git progress on stderr:\n%s", errb.String())
	}
}
