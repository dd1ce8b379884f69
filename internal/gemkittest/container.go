package gemkittest

import (
	"os"
	"path/filepath"
	"testing"
)

// InContainer returns argv run as in a container, the way Gemini CLI and
// Qwen Code tell one: /run/.containerenv exists (Gemini CLI 0.61.0
// isInContainer, packages/core/src/ide/ide-connection-utils.ts), on any
// machine, whether or not it runs in one. The CLI then dials
// host.docker.internal for its companion, which resolves (from a hosts
// file of the test's own, so that no lookup leaves this machine) to
// 127.0.0.2, where nothing listens: the connection is refused at once, as
// on a Docker host without the companion. Everything else is the
// machine's own (bubblewrap binds / to /; the network is not separated).
// A test using it must not set SSH_CONNECTION or REMOTE_CONTAINERS, which
// tell the CLI to dial 127.0.0.1. argv dies with bubblewrap
// (--die-with-parent): a test that ends it, by a context's end or a kill,
// ends argv, not only bubblewrap; argv left running kept the test's
// pipes open, and exec.Cmd.Wait waited for them until the package's
// timeout (TestServeTerminalGeminiAndQwen, after a failure under load).
func InContainer(t testing.TB, argv ...string) []string {
	t.Helper()
	bwrap := Tool(t, "bwrap", "bubblewrap")
	dir := t.TempDir()
	hosts, marker := filepath.Join(dir, "hosts"), filepath.Join(dir, "containerenv")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n::1 localhost ip6-localhost\n127.0.0.2 host.docker.internal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return append([]string{bwrap, "--die-with-parent", "--dev-bind", "/", "/", "--tmpfs", "/run", "--ro-bind", hosts, "/etc/hosts",
		"--ro-bind", marker, "/run/.containerenv", "--"}, argv...)
}
