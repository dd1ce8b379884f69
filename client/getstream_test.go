package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/testcompanion"
)

// TestOutcomesOnTheGETStream uses a companion that is not built on an MCP
// SDK (plain JSON answers to POST, notifications only on the GET stream)
// and answers each diff itself: accepted, rejected, or with the legacy
// ide/diffClosed, which counts as rejected.
func TestOutcomesOnTheGETStream(t *testing.T) {
	tests := []struct {
		answer   string
		accepted bool
		content  string
	}{
		{"accept", true, "proposal (edited)"},
		{"reject", false, ""},
		{"closed", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			tc, dir, ws := startTestCompanion(t, testcompanion.Flaws{Answer: tt.answer})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := connectReady(ctx, t, dir, ws)
			defer c.Close(context.Background())
			o, err := c.OpenDiff(ctx, filepath.Join(ws, "f.txt"), "proposal")
			if err != nil || o.Accepted != tt.accepted || o.Content != tt.content {
				t.Errorf("outcome %+v, %v", o, err)
			}
			// The companion going away is noticed from the stream.
			tc.Close()
			select {
			case <-c.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("the end of the companion was not noticed")
			}
		})
	}
}

// TestCLISideAnswersWinOverACompanionThatAnnounces uses a companion that
// announces ide/diffRejected when closeDiff closes a diff (older
// companions did, which is why the real client sends
// suppressNotification, in IdeClient.closeDiff of gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts): the person's answer given in the CLI, and Close,
// must not be turned into that rejection.
func TestCLISideAnswersWinOverACompanionThatAnnounces(t *testing.T) {
	_, dir, ws := startTestCompanion(t, testcompanion.Flaws{NotifyOnClose: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := connectReady(ctx, t, dir, ws)
	defer c.Close(context.Background())
	// A different file each time: the rejection a close announces may
	// arrive after the next diff of the same file started, and nothing in
	// it tells the two apart (which is why companions must not send it).
	for i := range 5 { // the race the rule prevents is lost only sometimes
		path := filepath.Join(ws, fmt.Sprintf("f%d.txt", i))
		d, err := c.StartDiff(ctx, path, "proposal")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ResolveDiffFromCLI(ctx, path, true); err != nil {
			t.Fatal(err)
		}
		if o, err := d.Wait(ctx); err != nil || !o.Accepted || o.Content != "proposal" {
			t.Fatalf("accepted in the CLI, got %+v, %v", o, err)
		}
	}

	errs := make(chan error, 1)
	d, err := c.StartDiff(ctx, filepath.Join(ws, "last.txt"), "proposal")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		o, err := d.Wait(ctx)
		if err == nil {
			err = fmt.Errorf("outcome %+v", o)
		}
		errs <- err
	}()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; !errors.Is(err, ErrClosed) {
		t.Errorf("a diff pending at Close ended with %v, want ErrClosed", err)
	}
}

// TestCloseLeavesNothingRunning: a program that connects and closes again
// and again (a status bar, a test suite) must not grow.
func TestCloseLeavesNothingRunning(t *testing.T) {
	_, dir, ws := startTestCompanion(t, testcompanion.Flaws{})
	cycle := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := connectReady(ctx, t, dir, ws)
		if err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	before := runtime.NumGoroutine()
	for range 5 {
		cycle()
	}
	gemkittest.WaitGoroutines(t, before+2, "after 5 connect/close cycles")
}

// TestDoctorNamesMissingTools: a companion without closeDiff connects, but
// the CLI disables diffing; doctor says which tools it lists.
func TestDoctorNamesMissingTools(t *testing.T) {
	_, dir, ws := startTestCompanion(t, testcompanion.Flaws{NoCloseDiff: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := Doctor(ctx, Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Host: "127.0.0.1", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	found := slices.ContainsFunc(d.Findings, func(f Finding) bool {
		return (f.Severity == "error" && strings.Contains(f.Message, "lists tools [openDiff], not both openDiff and closeDiff"))
	})
	if !found || !d.Works {
		t.Errorf("works=%v findings %+v", d.Works, d.Findings)
	}
}

// TestDoctorNoDiffTools: a companion that lists no diff tool at all is
// one whose editor cannot show diffs (gemkit's, behind an LSP client
// without applyEdit): the CLI asks in its terminal, a warning (said once,
// not again for the connection to the same file), not the error of a
// companion that lists one of the two.
func TestDoctorNoDiffTools(t *testing.T) {
	_, dir, ws := startTestCompanion(t, testcompanion.Flaws{NoDiffTools: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := Doctor(ctx, Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Host: "127.0.0.1", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, f := range d.Findings {
		if f.Severity == "error" {
			t.Errorf("error finding: %+v", f)
		}
		if f.Severity == "warning" && strings.Contains(f.Message, "its editor cannot show diffs") {
			found++
		}
	}
	if found != 1 || !d.Works {
		t.Errorf("works=%v findings %+v", d.Works, d.Findings)
	}
}

// startTestCompanion starts the Go test companion with flaws, its
// discovery file in a private directory and a fresh workspace, and stops
// it when the test ends.
func startTestCompanion(t *testing.T, flaws testcompanion.Flaws) (tc *testcompanion.Companion, dir, ws string) {
	t.Helper()
	root := t.TempDir()
	dir, ws = filepath.Join(root, "gemini", "ide"), filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	tc, err := testcompanion.Start(flaws, dir, ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	return tc, dir, ws
}

// connectReady connects to the companion of dir from ws as the CLI would
// and waits for its first context; the caller closes the client.
func connectReady(ctx context.Context, t *testing.T, dir, ws string) *Client {
	t.Helper()
	c, _, err := Connect(ctx, Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitContext(ctx); err != nil {
		c.Close(context.Background())
		t.Fatal(err)
	}
	return c
}
