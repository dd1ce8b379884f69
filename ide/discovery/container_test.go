package discovery

import (
	"os"
	"path/filepath"
	"testing"
)

func TestContainerEnv(t *testing.T) {
	tests := []struct {
		name   string
		marker string // file created under the root
		env    map[string]string
		want   bool
	}{
		{"no marker", "", nil, false},
		{"docker", ".dockerenv", nil, true},
		{"podman", "run/.containerenv", nil, true},
		{"docker over ssh", ".dockerenv", map[string]string{"SSH_CONNECTION": "1 2 3 4"}, false},
		{"devcontainer", ".dockerenv", map[string]string{"REMOTE_CONTAINERS": "true"}, false},
		{"vscode devcontainer", "run/.containerenv", map[string]string{"VSCODE_REMOTE_CONTAINERS_SESSION": "x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.marker != "" {
				p := filepath.Join(root, tt.marker)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env, why := ContainerEnv(root, func(k string) string { return tt.env[k] })
			if got := env[EnvRemoteContainers] == "true"; got != tt.want {
				t.Fatalf("env %v, want REMOTE_CONTAINERS set: %v", env, tt.want)
			}
			if tt.want && why == "" {
				t.Fatal("no reason given")
			}
		})
	}
}
