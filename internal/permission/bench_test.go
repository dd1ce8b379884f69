package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkResolve is a tool run's policy resolution, as toolrun does it
// once per run for write: workspace in a repository: the closed folders
// (with the running servers looked for through the Locator, whose
// answers are remembered per socket), the protected paths (the
// repository's and the user's git configuration read) and the folders no
// program starts from. bench/sandbox measures the launch that follows.
func BenchmarkResolve(b *testing.B) {
	root := b.TempDir()
	home := filepath.Join(root, "home")
	ws := filepath.Join(home, "proj")
	os.MkdirAll(filepath.Join(ws, ".git"), 0o755)
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n\trepositoryformatversion = 0\n\thooksPath = .husky/_\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = a\n"), 0o644)
	ext := filepath.Join(home, ".gemini", "extensions", "e")
	os.MkdirAll(ext, 0o755)
	env := map[string]string{"HOME": home}
	var loc Locator
	for b.Loop() {
		Resolve(Policy{Read: AccessWorkspace, Write: AccessWorkspace}, Where{Workspace: ws, Home: home,
			Closed: ClosedInputs{TempDirs: []string{root, "/tmp"}}, OwnFolder: ext, ExtensionFolders: []string{ext},
			Locator: &loc, Getenv: func(k string) string { return env[k] }})
	}
}

// BenchmarkLocatorWriters is the look at the listening sockets each run
// makes when no server started since the last one.
func BenchmarkLocatorWriters(b *testing.B) {
	var loc Locator
	loc.Writers()
	for b.Loop() {
		loc.Writers()
	}
}
