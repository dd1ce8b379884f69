package sandbox

import "github.com/gemkit/gemkit/internal/sandbox/child"

// LandlockABI returns the Landlock ABI version the running kernel offers,
// 0 when Landlock is missing or disabled.
func LandlockABI() int { return child.LandlockABI() }

// IsChild reports whether this process was started by the launcher as the
// sandbox child. Linking this package is enough to serve as the child (its
// child package takes over during initialization), so this is false by the
// time main runs; it stays for mains written before that.
func IsChild() bool { return child.IsChild() }

// ChildMain sets up the sandbox and execs the tool; see IsChild.
func ChildMain() int { return child.Main() }
