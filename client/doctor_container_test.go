package client

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestDoctorStaleFileInContainer: inside a container the CLI dials a host
// that does not resolve and then starts the file's stdio command, which
// (gemkit ide bridge) relays to the companion's port on this machine. A
// file whose editor was killed with its companion (SIGKILL to both, as in
// a tour with Neovim) is stale there too: doctor must say so and give the
// rm, not call the file fine and leave the person with the CLI's own
// words ("… To install the extension, run /ide install."). A file whose
// port still answers is not stale, whatever its pid. A companion killed
// while its editor runs (the terminal front-end's editor is the shell it
// was started from) leaves a file that is not stale but whose port is
// closed here too: doctor must say that the companion no longer serves
// and to start it again or delete the file, as it does outside a
// container: the CLI ranks the file first while its editor runs, so it
// hides a companion started since (a Neovim of a smaller pid).
func TestDoctorStaleFileInContainer(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	open := ln.Addr().(*net.TCPAddr).Port
	closed := gemkittest.ClosedPort(t)
	for _, tc := range []struct {
		name      string
		pid, port int
		// What doctor says of the file: its severity, and parts of its
		// message and fix.
		severity     Severity
		message, fix string
	}{
		{"editor and companion killed", exited.Process.Pid, closed, SeverityError, "stale", "delete it: rm "},
		{"editor gone, port answers", exited.Process.Pid, open, SeverityOK, "cannot be resolved", ""},
		{"editor runs, port answers", os.Getpid(), open, SeverityOK, "cannot be resolved", ""},
		{"companion killed, editor runs", os.Getpid(), closed, SeverityError, "no longer serves", "start the companion again ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dir, ws := ideDirs(t)
			file := filepath.Join(dir, discovery.FileName(tc.pid, tc.port))
			b, _ := json.Marshal(map[string]any{"port": tc.port, "workspacePath": ws, "authToken": "x",
				"ideInfo": map[string]string{"name": "neovim", "displayName": "Neovim"},
				"stdio":   map[string]any{"command": "true", "args": []string{"ide", "bridge", file}}})
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			d, err := Doctor(context.Background(), Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(),
				Host: "gemkit-doctor-test.invalid", Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			var said *Finding
			for i, f := range d.Findings {
				if f.Subject == filepath.Base(file) {
					said = &d.Findings[i]
				}
			}
			if said == nil {
				t.Fatalf("doctor says nothing of %s: %+v", filepath.Base(file), d.Findings)
			}
			if said.Severity != tc.severity || !strings.Contains(said.Message, tc.message) || !strings.Contains(said.Fix, tc.fix) ||
				tc.severity == SeverityError && !strings.HasSuffix(said.Fix, "rm "+file) {
				t.Errorf("doctor on %s: %s %q (fix %q); want %s, saying %q, with a fix that says %q", filepath.Base(file), said.Severity, said.Message, said.Fix, tc.severity, tc.message, tc.fix)
			}
		})
	}
}

// TestDoctorCompanionsCountsOnlyServing: two files for one folder whose
// editors run are two companions only while both ports listen. A
// companion killed under its running editor (the terminal front-end's
// shell) leaves a file whose port is closed; doctor says so of the file
// and must not also count it among the companions that serve the folder.
func TestDoctorCompanionsCountsOnlyServing(t *testing.T) {
	listening := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		// Open, but no companion: each connection is closed at once, so
		// that doctor's own connect fails without waiting out a timeout.
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return ln.Addr().(*net.TCPAddr).Port
	}
	for _, tc := range []struct {
		name   string
		second int
		warns  bool
	}{
		{"both listen", listening(), true},
		{"one port closed", gemkittest.ClosedPort(t), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dir, ws := ideDirs(t)
			// Both files are named after running processes: this test's
			// and its parent's.
			for pid, port := range map[int]int{os.Getpid(): listening(), os.Getppid(): tc.second} {
				b, _ := json.Marshal(map[string]any{"port": port, "workspacePath": ws, "authToken": "x",
					"ideInfo": map[string]string{"name": "gemkit", "displayName": "gemkit"}})
				if err := os.WriteFile(filepath.Join(dir, discovery.FileName(pid, port)), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			d, err := Doctor(context.Background(), Options{Dir: dir, Cwd: ws, IDEPID: 1,
				Host: "127.0.0.1", Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			warned := false
			for _, f := range d.Findings {
				warned = warned || f.Subject == "companions"
			}
			if warned != tc.warns {
				t.Errorf("companions warning: %v, want %v: %+v", warned, tc.warns, d.Findings)
			}
		})
	}
}
