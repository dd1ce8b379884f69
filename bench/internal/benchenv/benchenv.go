// Package benchenv holds what the benchmark programs share about where
// they run.
package benchenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// RepoRoot walks up from the working directory to the module root, where
// the benchmarks find interop/ and build gemkit.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from inside the gemkit repository or pass -root")
		}
		dir = parent
	}
}

// BuildGemkit builds gemkit from the module at root into dir, as it ships
// (CGO_ENABLED=0), and returns the binary's path.
func BuildGemkit(root, dir string) (string, error) {
	bin := filepath.Join(dir, "gemkit")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gemkit")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build gemkit: %w", err)
	}
	return bin, nil
}

// Scratch makes a temporary folder (its name starting with prefix) and
// builds gemkit from this repository into it: the start of a benchmark
// that measures the tree it runs in. The caller removes tmp.
func Scratch(prefix string) (tmp, bin string, err error) { return ScratchOr(prefix, "") }

// ScratchOr is Scratch, but for a gemkit binary given (a -gemkit flag),
// which it measures instead of building one.
func ScratchOr(prefix, given string) (tmp, bin string, err error) {
	root, err := RepoRoot()
	if err != nil {
		return "", "", err
	}
	if tmp, err = os.MkdirTemp("", prefix); err != nil {
		return "", "", err
	}
	if given != "" {
		return tmp, given, nil
	}
	if bin, err = BuildGemkit(root, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", "", err
	}
	return tmp, bin, nil
}

// NeovimFlags declares the flags of the benchmarks that drive Neovim with
// gemkit's plugin: -nvim, -gemkit and -root. NeovimDefaults fills in
// those not given, but for gemkit, which each benchmark builds where it
// keeps its files (BuildGemkit).
func NeovimFlags(fs *flag.FlagSet, nvim, gemkit, root *string) {
	fs.StringVar(nvim, "nvim", "", "Neovim binary (default: nvim-0.10 when on $PATH, else nvim)")
	fs.StringVar(gemkit, "gemkit", "", "gemkit binary (default: built from the repository)")
	fs.StringVar(root, "root", "", "repository root (default: found from the working directory)")
}

// NeovimDefaults sets nvim to Neovim() and root to RepoRoot() where the
// flags left them empty.
func NeovimDefaults(nvim, root *string) error {
	if *root == "" {
		r, err := RepoRoot()
		if err != nil {
			return err
		}
		*root = r
	}
	if *nvim == "" {
		*nvim = Neovim()
	}
	return nil
}

// Neovim is the Neovim the benchmarks drive when none is named: the
// current release (nvim-0.10) when it is on $PATH, else nvim.
func Neovim() string {
	if p, err := exec.LookPath("nvim-0.10"); err == nil {
		return p
	}
	return "nvim"
}

// Poll calls f every interval until it succeeds or d has passed, and
// returns its last error.
func Poll(d, every time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(every)
	}
}

// ClaudeCode is the pinned Claude Code's native executable in
// interop/node_modules under root (as internal/claudetest finds it: the
// package's postinstall puts it at bin/claude.exe, else the platform
// package holds it).
func ClaudeCode(root string) (string, error) {
	mods := filepath.Join(root, "interop", "node_modules", "@anthropic-ai")
	for _, bin := range []string{
		filepath.Join(mods, "claude-code", "bin", "claude.exe"),
		filepath.Join(mods, "claude-code-linux-"+map[string]string{"amd64": "x64"}[runtime.GOARCH], "claude"),
		filepath.Join(mods, "claude-code-linux-"+runtime.GOARCH, "claude"),
	} {
		if fi, err := os.Stat(bin); err == nil && fi.Size() > 1<<20 {
			return bin, nil
		}
	}
	return "", fmt.Errorf("no native Claude Code binary in %s: run `npm install --no-save` in interop/", mods)
}
