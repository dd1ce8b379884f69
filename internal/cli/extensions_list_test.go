package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// listHome installs count extensions of the "tools" template into a new
// home, a third of them disabled, as bench/extensions does, and returns
// the home and the workspace.
func listHome(b testing.TB, count int) (home, ws string) {
	b.Helper()
	tmp := b.TempDir()
	home, ws = filepath.Join(tmp, "home"), filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	st := extension.OpenStore(home).WithWorkspace(ws)
	addExtensions(b, st, filepath.Join(tmp, "src"), 0, count)
	return home, ws
}

// addExtensions installs the extensions numbered from to to-1 into st.
func addExtensions(b testing.TB, st *extension.Store, srcDir string, from, to int) {
	b.Helper()
	yes := func(context.Context, extension.ConsentPrompt) (bool, error) { return true, nil }
	for i := from; i < to; i++ {
		name := fmt.Sprintf("bench-ext-%03d", i)
		src := filepath.Join(srcDir, name)
		if _, err := extension.CreateFromTemplate(src, "tools"); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Install(context.Background(), extension.InstallRequest{Source: src, Consent: yes}); err != nil {
			b.Fatal(err)
		}
		if i%3 == 0 {
			if err := st.Disable(name, extension.ScopeUser); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkExtensionsList is `gemkit extensions list` and `list --json`
// with 200 extensions installed, in the process: the command's own work
// without the process start (bench/extensions times the whole process).
// Its allocations per run are most of what the command's heap grows by.
func BenchmarkExtensionsList(b *testing.B) {
	home, ws := listHome(b, 200)
	for _, tc := range []struct{ name, flag string }{{"text", ""}, {"json", "--json"}} {
		b.Run(tc.name, func(b *testing.B) {
			args := []string{"extensions", "--home", home, "--workspace", ws, "list"}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			for b.Loop() {
				var errb strings.Builder
				if code := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb}); code != ExitOK {
					b.Fatalf("exit %d: %s", code, errb.String())
				}
			}
		})
	}
}

// TestListAllocationsPerExtension bounds what `extensions list` and
// `list --json` allocate for each installed extension (the difference
// between 10 and 30 installed, over 20, so that the command's fixed cost
// drops out). Allocations follow the work done per extension (a manifest
// decoded twice, a file read through a growing buffer, a folder opened
// once per file, the text list reading skills and hooks it does not
// show), and unlike time they can be counted exactly on a loaded
// machine: a change that makes list do more per extension fails here,
// and BenchmarkExtensionsList says by how much.
func TestListAllocationsPerExtension(t *testing.T) {
	home, ws := listHome(t, 10)
	st := extension.OpenStore(home).WithWorkspace(ws)
	allocs := func(flags ...string) float64 {
		args := append([]string{"extensions", "--home", home, "--workspace", ws, "list"}, flags...)
		return testing.AllocsPerRun(3, func() {
			var errb strings.Builder
			if code := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb}); code != ExitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
		})
	}
	text10, json10 := allocs(), allocs("--json")
	addExtensions(t, st, filepath.Join(filepath.Dir(home), "src"), 10, 30)
	text30, json30 := allocs(), allocs("--json")
	text, json := (text30-text10)/20, (json30-json10)/20
	t.Logf("allocations per extension: text %.0f, --json %.0f", text, json)
	// measured: 217 and 247 (225 and 254 with -race); 270 and 299 since
	// list reads where each extension's code runs (one listing of its folder,
	// then only the agents, hooks, commands and skills it has).
	const textBound, jsonBound = 300, 330
	if text > textBound || json > jsonBound {
		t.Errorf("list allocates %.0f times per extension (bound %d), list --json %.0f (bound %d)", text, textBound, json, jsonBound)
	}
}

// Bounds of TestStartIsLight, in bytes allocated by one package's
// initialization (measured: gemkit's own at most 17 KB each, the largest
// other 81 KB, github.com/google/jsonschema-go through the MCP SDK).
const (
	ownPackageInitBytes   = 32 << 10
	otherPackageInitBytes = 128 << 10
)

// TestStartIsLight: every command, `extensions list` among them, first
// runs the initialization of every package linked into gemkit. gemkit's
// own packages keep theirs to small tables (the name rules of the
// manifest were regular expressions compiled there, 84 KB for
// internal/extension, more than list's checks of 200 extensions cost),
// and no dependency builds anything large: a new one that does fails
// here (santhosh-tekuri/jsonschema, linked through mark3labs/mcp-go until
// gemkit's MCP moved to the official SDK, compiled its meta-schemas at
// init: 1.7 MB, 22.6 M of the 25.6 M instructions of `gemkit --version`). The runtime traces what each package's init
// allocates, which is exact, unlike its time on a loaded machine.
func TestStartIsLight(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(gemkittest.Gemkit(t), "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gemkit --version: %v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		seen++
		b, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("unexpected trace line %q", line)
		}
		pkg := f[1]
		switch {
		case strings.HasPrefix(pkg, "github.com/gemkit/gemkit/"):
			if b > ownPackageInitBytes {
				t.Errorf("%s allocates %d bytes at init (bound %d): build what it needs when a command needs it", pkg, b, ownPackageInitBytes)
			}
		case b > otherPackageInitBytes:
			t.Errorf("%s allocates %d bytes at init (bound %d), at every start of gemkit: keep it out of the binary, or behind a package only the command that uses it links", pkg, b, otherPackageInitBytes)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace in the output of gemkit --version:\n%s", out)
	}
}
