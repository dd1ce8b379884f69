package causeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/golden"
)

// archive is the real stderr of failing programs, with the cause of
// each (testdata/runtimes.txtar).
const archive = "testdata/runtimes.txtar"

// cases are the archive's cases: each name with a .cause section.
func cases(a *golden.Archive) []string {
	var out []string
	for _, s := range a.Sections {
		if name, ok := strings.CutSuffix(s.Name, ".cause"); ok {
			out = append(out, name)
		}
	}
	return out
}

// TestCause: the cause picked from each stderr of the archive, written
// at once and a few bytes at a time (as a pipe hands it over), is the
// line a person can act on, not the stack's last frames nor Node's
// footer; a stderr with no line that reads as an error has none.
func TestCause(t *testing.T) {
	a := golden.ReadArchive(t, archive)
	for _, name := range cases(a) {
		t.Run(name, func(t *testing.T) {
			stderr, want := a.Get(name+".stderr"), strings.TrimSpace(a.Get(name+".cause"))
			if stderr == "" {
				t.Fatalf("%s has no %s.stderr: go test -update makes it", archive, name)
			}
			if got := Of(stderr); got != want {
				t.Errorf("the cause is %q, want %q; stderr:\n%s", got, want, stderr)
			}
			for _, size := range []int{1, 7, 100} {
				var f Finder
				for b := []byte(stderr); len(b) > 0; {
					n := min(size, len(b))
					f.Write(b[:n])
					b = b[n:]
				}
				if got := f.Cause(); got != want {
					t.Errorf("written %d bytes at a time, the cause is %q, want %q", size, got, want)
				}
			}
		})
	}
}

// TestCauseBounded: what a program prints is not trusted to be bounded.
// A line without end is kept to maxLine; a cause after a megabyte of
// log is found; Reset forgets a run's cause.
func TestCauseBounded(t *testing.T) {
	var f Finder
	f.Write([]byte(strings.Repeat("progress ", 1<<17) + "\n"))
	f.Write([]byte(strings.Repeat("loading\n", 1<<17)))
	f.Write([]byte("Error: " + strings.Repeat("x", 1<<20)))
	if got := f.Cause(); len(got) != maxLine || !strings.HasPrefix(got, "Error: xxx") {
		t.Errorf("the cause is %d bytes: %.40q", len(got), got)
	}
	if len(f.partial) > maxLine {
		t.Errorf("the line under way holds %d bytes", len(f.partial))
	}
	f.Reset()
	if got := f.Cause(); got != "" {
		t.Errorf("after Reset the cause is %q", got)
	}
}

// TestCauseFromRuntime runs each script of the archive (node for .cjs
// and .mjs, python3 for .py) and picks the cause from its stderr as it
// is now: the runtimes' words are what the archive holds, or -update
// rewrites them.
func TestCauseFromRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node and python3 on the archive's scripts: runs without -short, as in CI")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node (>= 20) is needed")
	}
	version, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatal(err)
	}
	a := golden.ReadArchive(t, archive)
	dir := t.TempDir()
	for _, s := range a.Sections {
		if strings.HasSuffix(s.Name, ".stderr") || strings.HasSuffix(s.Name, ".cause") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(s.Name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s.Data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range cases(a) {
		var script, runtime string
		for ext, rt := range map[string]string{".cjs": node, ".mjs": node, ".py": "python3"} {
			if a.Get(name+ext) != "" {
				script, runtime = name+ext, rt
			}
		}
		if script == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			if _, err := exec.LookPath(runtime); err != nil {
				t.Skipf("%s is not installed", runtime)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, runtime, script)
			cmd.Dir, cmd.Env = dir, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "NODE_PATH=", "PYTHONPATH="}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Run(); err == nil {
				t.Fatalf("%s did not fail", script)
			}
			got := strings.NewReplacer(dir, "$DIR", strings.TrimSpace(string(version)), "$NODE").Replace(stderr.String())
			if golden.Updating() {
				a.Set(name+".stderr", got)
			}
			if cause, want := Of(got), strings.TrimSpace(a.Get(name+".cause")); cause != want {
				t.Errorf("the cause is %q, want %q; stderr:\n%s", cause, want, got)
			}
		})
	}
	if golden.Updating() {
		golden.Check(t, archive, a.Format())
	}
}
