package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/child"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestGate: a Command's program runs only once its Gate has passed, the
// sandbox being set up meanwhile; a Gate's error is Start's, and the
// program never runs; a start cancelled while the Gate runs ends it.
func TestGate(t *testing.T) {
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	errRefused := errors.New("consent does not hold")
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			mark := filepath.Join(w.ws, "ran-"+m.name)
			cmd := func(gate func(context.Context) error) *Command {
				return &Command{Policy: p, Path: "/bin/sh", Args: []string{"-c", "echo ran > " + mark}, Dir: w.ws, Gate: gate}
			}

			// Passed after a while: the program runs, after it.
			release, entered := make(chan struct{}), make(chan struct{})
			started := make(chan error, 1)
			var proc *Process
			go func() {
				var err error
				proc, err = m.l.Start(context.Background(), cmd(func(ctx context.Context) error {
					close(entered)
					<-release
					return nil
				}))
				started <- err
			}()
			<-entered
			// The child is set up and waiting; give it time to run the
			// program if it wrongly would.
			time.Sleep(200 * time.Millisecond)
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the program ran before its gate passed")
			}
			close(release)
			if err := <-started; err != nil {
				t.Fatal(err)
			}
			if err := proc.Wait(); err != nil {
				t.Fatal(err)
			}
			if data, err := os.ReadFile(mark); err != nil || strings.TrimSpace(string(data)) != "ran" {
				t.Fatalf("the program did not run once its gate passed: %q %v", data, err)
			}
			os.Remove(mark)

			// Failed: Start's error is the gate's, and nothing ran.
			_, err := m.l.Start(context.Background(), cmd(func(context.Context) error { return errRefused }))
			if !errors.Is(err, errRefused) {
				t.Fatalf("Start with a failing gate: %v, want its error", err)
			}
			// Failed late, after the sandbox was set up.
			_, err = m.l.Start(context.Background(), cmd(func(context.Context) error {
				time.Sleep(100 * time.Millisecond) // past the child's set-up, to fail while it waits
				return errRefused
			}))
			if !errors.Is(err, errRefused) {
				t.Fatalf("Start with a gate failing late: %v, want its error", err)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the program ran though its gate failed")
			}

			// Cancelled: the gate sees it, Start ends.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			gateEnded := make(chan struct{})
			_, err = m.l.Start(ctx, cmd(func(ctx context.Context) error {
				defer close(gateEnded)
				cancel()
				<-ctx.Done()
				return ctx.Err()
			}))
			if err == nil {
				t.Fatal("a cancelled start succeeded")
			}
			<-gateEnded
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the program of a cancelled start ran")
			}
		})
	}
}

// TestGatePanics: a Gate that panics is a failed one: Start returns an
// error saying so and the program never runs; the panic neither takes
// gemkit down (with the other servers it runs) nor leaves the gate
// looking passed to the child waiting on it.
func TestGatePanics(t *testing.T) {
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			mark := filepath.Join(w.ws, "ran-"+m.name)
			_, err := m.l.Start(context.Background(), &Command{Policy: p, Path: "/bin/sh", Args: []string{"-c", "echo ran > " + mark}, Dir: w.ws,
				Gate: func(context.Context) error { panic("consent check broke") }})
			if err == nil || !strings.Contains(err.Error(), "consent check broke") {
				t.Fatalf("Start with a panicking gate: %v, want an error naming the panic", err)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the program ran though its gate panicked")
			}
		})
	}
}

// TestStartWord: the child's word to exec is Go only once its move into
// the run's cgroup has succeeded and the gate (if any) has passed; a move
// that fails, or a gate that refuses, ends the pipe without it, and the
// move's error is kept for Start.
func TestStartWord(t *testing.T) {
	okCgroup := func(t *testing.T) *cgroup {
		procs := filepath.Join(t.TempDir(), "cgroup.procs")
		if err := os.WriteFile(procs, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return &cgroup{version: "v1", procs: []string{procs}}
	}
	brokenCgroup := &cgroup{version: "v1", procs: []string{filepath.Join(t.TempDir(), "gone", "cgroup.procs")}}
	gateWith := func(err error) *gate {
		return runGate(context.Background(), func(context.Context) error { return err })
	}
	for _, tc := range []struct {
		name    string
		cg      func(t *testing.T) *cgroup
		g       *gate
		goWord  bool
		moveErr bool
	}{
		{"cgroup", okCgroup, nil, true, false},
		{"cgroup and gate", okCgroup, gateWith(nil), true, false},
		{"gate only", func(*testing.T) *cgroup { return nil }, gateWith(nil), true, false},
		{"move fails", func(*testing.T) *cgroup { return brokenCgroup }, nil, false, true},
		{"move fails, gate passes", func(*testing.T) *cgroup { return brokenCgroup }, gateWith(nil), false, true},
		{"gate refuses", okCgroup, gateWith(errors.New("consent does not hold")), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw, err := newStartWord()
			if err != nil {
				t.Fatal(err)
			}
			defer sw.r.Close()
			sw.send(tc.cg(t), os.Getpid(), tc.g)
			// The pipe ends once the word is said, or withheld.
			b := make([]byte, 2)
			n, _ := io.ReadFull(sw.r, b)
			if got := n == 1 && b[0] == child.Go; got != tc.goWord {
				t.Errorf("word %q, want Go: %v", b[:n], tc.goWord)
			}
			if err := sw.wait(); (err != nil) != tc.moveErr {
				t.Errorf("move error %v, want one: %v", err, tc.moveErr)
			}
		})
	}
}

// TestOnExitNamespaces: with OnExit, the tool's mount namespace outlives
// the tool until OnExit has been called (its teardown follows it), and
// nothing of it is held once Wait has returned, nor after a start its
// Gate refused.
func TestOnExitNamespaces(t *testing.T) {
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	mine, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	// held is the mount namespaces other than this process's that its
	// descriptors name.
	held := func() []string {
		var out []string
		fds, _ := os.ReadDir("/proc/self/fd")
		for _, fd := range fds {
			if l, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(l, "mnt:[") && l != mine {
				out = append(out, l)
			}
		}
		return out
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var atExit []string
			proc, err := m.l.Start(context.Background(), &Command{Policy: p, Path: "/bin/sh", Args: []string{"-c", "exit 0"}, Dir: w.ws,
				OnExit: func(*os.ProcessState) { atExit = held() }})
			if err != nil {
				t.Fatal(err)
			}
			if err := proc.Wait(); err != nil {
				t.Fatal(err)
			}
			if proc.Enforcement.MountNS && len(atExit) != 1 {
				t.Errorf("at OnExit, the tool's mount namespace held: %v", atExit)
			}
			if h := held(); len(h) != 0 {
				t.Errorf("after Wait, still held: %v", h)
			}
			_, err = m.l.Start(context.Background(), &Command{Policy: p, Path: "/bin/sh", Args: []string{"-c", "exit 0"}, Dir: w.ws,
				OnExit: func(*os.ProcessState) {}, Gate: func(context.Context) error { return errors.New("refused") }})
			if err == nil {
				t.Fatal("a refused gate's start succeeded")
			}
			if h := held(); len(h) != 0 {
				t.Errorf("after a refused start, still held: %v", h)
			}
		})
	}
}

// TestOnExitNamespacesUnprivileged runs TestOnExitNamespaces as uid 65534.
func TestOnExitNamespacesUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestOnExitNamespaces$")
}
