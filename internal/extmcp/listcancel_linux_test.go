package extmcp_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestListingCancelled: a listing that what waited for it gave up on
// once the server had started and answered initialize (the client went,
// or gemkit mcp ended, as a session's end cancels the listing a
// server's list_changed began) is told as that, as a start given up on
// is (TestStartCancelled), not as a server that did not list within its
// bound.
func TestListingCancelled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s, held := heldListing(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if gemkittest.Poll(30*time.Second, 20*time.Millisecond, held) {
			cancel()
		}
	}()
	_, failed := s.m.Tools(ctx)
	if !held() {
		t.Fatalf("the server never held a listing: %+v\n%s", failed, s.log.String())
	}
	if len(failed) != 1 {
		t.Fatalf("%d failures, want the held server's: %+v", len(failed), failed)
	}
	if err := failed[0].Err.Error(); !strings.Contains(err, "stopped waiting (the client went or cancelled its request, or gemkit mcp ended)") || strings.Contains(err, "within") || !errors.Is(failed[0].Err, extmcp.ErrStopped) {
		t.Errorf("a listing given up on is told as %q", err)
	}
}

// TestListingCutByClose: a listing under way when gemkit mcp ends (the
// manager closes, stopping the server, while a listing that no client's
// end cancels still waits for it, as a re-listing after a server said
// its list changed does) ends with the server, told as cut short. Close
// used to wait for the listing's own bound, since the SDK's Close waits
// for the requests under way and the server was killed after it, and
// then a listing cut by the kill was told as a server that could not
// list ("connection closed: … client is closing"), which gemkit mcp
// logged as a warning.
func TestListingCutByClose(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s, held := heldListing(t)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		if gemkittest.Poll(30*time.Second, 20*time.Millisecond, held) {
			s.m.Close()
		}
	}()
	began := time.Now()
	_, failed := s.m.Tools(context.Background())
	<-closed
	// The listing ends with the server, before its own bound, which
	// began after began; one that lasted it waited for Close, which
	// waited for it.
	if d := time.Since(began); d >= extmcp.MaxStart {
		t.Errorf("the listing lasted %v, its whole bound", d.Round(time.Second))
	}
	if !held() {
		t.Fatalf("the server never held a listing: %+v\n%s", failed, s.log.String())
	}
	if len(failed) != 1 {
		t.Fatalf("%d failures, want the held server's: %+v", len(failed), failed)
	}
	// Told as the listing's own bound ("within 20s"), it waited for the
	// server that Close was stopping, and Close for it.
	if err := failed[0].Err.Error(); !errors.Is(failed[0].Err, extmcp.ErrStopped) || strings.Contains(err, "could not list") || strings.Contains(err, "within") {
		t.Errorf("a listing cut short by the manager's end is told as %q", err)
	}
}

// heldListing is a manager of one server, the fixture, that holds its
// listings (their bound MaxStart), and held, which reports whether it
// holds one: the fixture says so in its HOME, the server's data folder
// below s.home, once it started and answered initialize.
func heldListing(t *testing.T) (s *setup, held func() bool) {
	s = newSetup(t, 30*time.Second)
	hold := filepath.Join(s.ws, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sp := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	sp.Env = map[string]string{"FIXTURE_HOLD_LIST": hold}
	sp.Timeout = extmcp.MaxStart
	s.m.Sync([]extmcp.Spec{sp})
	held = func() bool {
		found := false
		filepath.WalkDir(s.home, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "list-held" {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
		return found
	}
	return s, held
}
