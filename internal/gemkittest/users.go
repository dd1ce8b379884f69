package gemkittest

import (
	"os"
	"testing"
)

// AsRootAndUnprivileged runs run twice as subtests: "root" (as the user
// the tests run as) and "uid 65534", which run makes every process it
// starts run as that user (unprivileged true). The second needs root to
// switch users; elsewhere it is skipped, the first run having been an
// unprivileged user's already. CI runs as root.
func AsRootAndUnprivileged(t *testing.T, run func(t *testing.T, unprivileged bool)) {
	t.Run("root", func(t *testing.T) { run(t, false) })
	t.Run("uid 65534", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("needs root to run everything as uid 65534; the run above was already unprivileged, as this user; CI runs as root")
		}
		run(t, true)
	})
}
