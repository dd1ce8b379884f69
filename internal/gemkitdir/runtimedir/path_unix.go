//go:build !windows

package runtimedir

// join is filepath.Join(dir, name), without path/filepath (see the
// package's doc).
func join(dir, name string) string {
	switch {
	case dir == "" && name == "":
		return ""
	case dir == "":
		return clean(name)
	case name == "":
		return clean(dir)
	}
	return clean(dir + "/" + name)
}

func isAbs(p string) bool { return len(p) > 0 && p[0] == '/' }
