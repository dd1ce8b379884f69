// Package benchenv holds what the benchmark programs share about where
// they run.
package benchenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
