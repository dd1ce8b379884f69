package discovery

import (
	"os"
	"path/filepath"
)

// The real Gemini CLI (0.61.0, getIdeServerHost) dials host.docker.internal
// instead of 127.0.0.1 when it finds /.dockerenv or /run/.containerenv,
// unless SSH_CONNECTION, REMOTE_CONTAINERS or
// VSCODE_REMOTE_CONTAINERS_SESSION is set. A companion in the same
// container as the CLI listens on the container's own loopback. A CLI
// that dials host.docker.internal in vain still reaches it through the
// stdio command of the discovery file (the bridge), if the file names
// one; a terminal the editor gives REMOTE_CONTAINERS=true spares it the
// detour (and a host.docker.internal that answers, or drops packets).
const (
	// EnvRemoteContainers is the variable a companion in a container adds
	// to the env it reports; the CLI then dials 127.0.0.1.
	EnvRemoteContainers = "REMOTE_CONTAINERS"
)

// containerMarkers are the files whose presence makes the real CLI think
// it runs in a container.
var containerMarkers = []string{"/.dockerenv", "/run/.containerenv"}

// ContainerEnv returns the variables to add to a companion's reported env
// so that a CLI in the same container dials loopback, and one line saying
// why; nil when root (the filesystem root to probe, "/" but for tests)
// holds no container marker or getenv already shows one of the variables
// the CLI honours.
func ContainerEnv(root string, getenv func(string) string) (map[string]string, string) {
	for _, v := range []string{"SSH_CONNECTION", EnvRemoteContainers, "VSCODE_REMOTE_CONTAINERS_SESSION"} {
		if getenv(v) != "" {
			return nil, ""
		}
	}
	for _, m := range containerMarkers {
		if _, err := os.Stat(filepath.Join(root, m)); err == nil {
			return map[string]string{EnvRemoteContainers: "true"},
				"in a container (" + m + "): a gemini started here dials host.docker.internal unless " + EnvRemoteContainers +
					" is set, so " + EnvRemoteContainers + "=true is added to the env this companion reports; a gemini started without it reaches the companion through the discovery file's stdio bridge"
		}
	}
	return nil, ""
}
