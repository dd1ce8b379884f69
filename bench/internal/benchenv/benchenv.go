// Package benchenv holds what the benchmark programs share about where
// they run.
package benchenv

import (
	"errors"
	"os"
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
