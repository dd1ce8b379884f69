package runtimedir

import "path/filepath"

// join is filepath.Join: no warm hook runs here, so the order of
// initialization does not matter.
func join(dir, name string) string { return filepath.Join(dir, name) }

func isAbs(p string) bool { return filepath.IsAbs(p) }
