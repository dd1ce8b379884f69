package sandbox

import (
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// Of several bad paths, Check reports the same one every time: the
// extension folder, then the temp dir, the workspace and home.
func TestPolicyCheckReportsInOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    Policy
		want string
	}{
		{"all relative", Policy{Read: extension.AccessHome, ExtensionDir: "ext", TempDir: "tmp", Workspace: "ws", Home: "home"},
			`sandbox extension folder "ext" must be an absolute path`},
		{"temp dir and later", Policy{Read: extension.AccessHome, ExtensionDir: "/ext", TempDir: "", Workspace: "ws", Home: "home"},
			`sandbox temp dir "" must be an absolute path`},
		{"workspace and home", Policy{Read: extension.AccessHome, ExtensionDir: "/ext", TempDir: "/tmp/t", Workspace: "ws", Home: "home"},
			`sandbox workspace "ws" must be an absolute path`},
		{"home only", Policy{Read: extension.AccessHome, ExtensionDir: "/ext", TempDir: "/tmp/t", Workspace: "/ws", Home: "home"},
			`sandbox home "home" must be an absolute path`},
	}
	for _, tt := range tests {
		for i := 0; i < 20; i++ { // map order used to vary from one call to the next
			p := tt.p
			err := p.Check()
			if err == nil || err.Error() != tt.want {
				t.Fatalf("%s: Check() = %v, want %s", tt.name, err, tt.want)
			}
		}
	}
}
