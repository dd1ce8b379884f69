package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extswitch"
	"github.com/gemkit/gemkit/internal/treewatch"
	"github.com/spf13/cobra"
)

// TestHookStoreWatch: a warm server's check at each claim (StoreCheck)
// does not read the store again while nothing that loadHook reads has
// changed, and reads it again, and finds the sandbox stale, after each
// way the store or the extension can say other things of the hook: a
// widening, a setting's value, the extension's hooks, a new entry of
// the extensions folder. Reading the store, or writing gemkit's other
// records beside its own, is no change.
func TestHookStoreWatch(t *testing.T) {
	setup := func(t *testing.T) (*env, string, *extswitch.StoreCheck) { return storeCheckOf(t) }

	t.Run("nothing changed", func(t *testing.T) {
		e, _, c := setup(t)
		e.mustRun("list")
		e.mustRun("describe", "noted")
		must(t, os.WriteFile(filepath.Join(e.home, ".gemini", "gemkit", "unrelated.json"), []byte("{}"), 0o600))
		for i := range 3 {
			if err := c.Fresh(); err != nil {
				t.Fatalf("claim %d: %v", i, err)
			}
		}
		if n := c.Reads.Load(); n != 0 {
			t.Errorf("the store was read again %d times with nothing changed", n)
		}
	})
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, e *env, src string)
	}{
		{"the hook widened", func(t *testing.T, e *env, src string) {
			e.mustRun("sandbox", "noted", "--hook", "BeforeTool-1", "--allow-host", "api.example.com")
		}},
		{"a setting's value", func(t *testing.T, e *env, src string) {
			must(t, os.WriteFile(filepath.Join(e.home, ".gemini", "extensions", "noted", ".env"), []byte("NOTED_LEVEL=9\n"), 0o600))
		}},
		{"the hooks rewritten", func(t *testing.T, e *env, src string) {
			must(t, os.WriteFile(filepath.Join(src, "hooks", "hooks.json"), []byte(`{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "cat; true"}]}]}}`), 0o644))
		}},
		{"the switch turned off", func(t *testing.T, e *env, src string) {
			e.mustRun("sandbox", "noted", "--off")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, src, c := setup(t)
			if err := c.Fresh(); err != nil || c.Reads.Load() != 0 {
				t.Fatalf("before the change: %v, %d reads", err, c.Reads.Load())
			}
			tc.change(t, e, src)
			if err := c.Fresh(); err == nil {
				t.Error("the sandbox set up before the change is still said to be the run's")
			}
		})
	}
	// A change the watch sees that leaves the hook as it was: read
	// again, and the sandbox still the run's.
	t.Run("another extension linked", func(t *testing.T) {
		e, _, c := setup(t)
		other := filepath.Join(t.TempDir(), "other")
		writeFiles(t, other, map[string]string{"gemini-extension.json": `{"name": "other", "version": "1.0.0"}`})
		e.mustRun("link", other, "--consent")
		if err := c.Fresh(); err != nil {
			t.Errorf("after another extension's link: %v", err)
		}
		if c.Reads.Load() != 1 {
			t.Errorf("the store was read again %d times, not once", c.Reads.Load())
		}
	})
}

// storeCheckOf is a warm server's StoreCheck of a linked extension's
// switched hook (one declared setting), both watches placed, in a
// store of its own.
func storeCheckOf(t testing.TB) (*env, string, *extswitch.StoreCheck) {
	e := newEnv(t)
	t.Chdir(e.ws)
	src := filepath.Join(t.TempDir(), "noted")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json": `{"name": "noted", "version": "1.0.0", "settings": [{"name": "Level", "description": "how much", "envVar": "NOTED_LEVEL"}]}`,
		"hooks/hooks.json":      `{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "cat"}]}]}}`,
	})
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "noted")
	cmd := &cobra.Command{}
	cmd.Flags().String("home", e.home, "")
	cmd.Flags().String("workspace", "", "")
	a := newApp(Streams{In: strings.NewReader(""), Out: os.Stdout, Err: os.Stderr})
	lh, err := loadHook(cmd, a, "noted", "BeforeTool-1")
	must(t, err)
	fp, err := lh.H.Fingerprint()
	must(t, err)
	tree, err := treewatch.New(lh.Ext.Dir)
	must(t, err)
	t.Cleanup(func() { tree.Close() })
	reload := func() (*extswitch.LoadedHook, error) { return loadHook(cmd, a, "noted", "BeforeTool-1") }
	names := extswitch.WatchStore(lh, reload, fp, a.log)
	if names == nil {
		t.Fatal("the store is not watched")
	}
	t.Cleanup(func() { names.Close() })
	c := &extswitch.StoreCheck{Tree: tree, Names: names, Workspace: lh.H.Workspace, FP: fp, Reload: func() (string, error) {
		now, err := reload()
		if err != nil {
			return "", err
		}
		return now.H.Fingerprint()
	}}
	return e, src, c
}

// BenchmarkHookStoreCheck is a warm server's check at a claim that the
// store still says what it said at the set-up: answered by the watches
// (nothing changed), and by reading the store again (no watch).
func BenchmarkHookStoreCheck(b *testing.B) {
	for _, watched := range []bool{true, false} {
		b.Run(map[bool]string{true: "watched", false: "read again"}[watched], func(b *testing.B) {
			_, _, c := storeCheckOf(b)
			if !watched {
				c.Names = nil
			}
			for b.Loop() {
				if err := c.Fresh(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
