package toolrun

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// BenchmarkSettingsAndScript measures what a tool call reads of its
// extension before the sandbox starts, apart from the consent digest
// (extension's BenchmarkReadContent): the settings files of the folder
// and its entry, and the script, through Roots (confined), against the
// plain reads they replaced (plain, the reference: os.Open of .env and
// EvalSymlinks of the script).
func BenchmarkSettingsAndScript(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "ext")
	os.MkdirAll(filepath.Join(dir, "tools"), 0o755)
	os.WriteFile(filepath.Join(dir, extension.ManifestFile), []byte(`{"name": "b", "version": "1.0.0",
  "tools": [{"name": "t", "description": "d", "executable": "tools/t.sh", "runtime": "shell"}]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "tools", "t.sh"), []byte("exit 0\n"), 0o755)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("KEY=value\nOTHER=two\n"), 0o600)
	ext, err := extension.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	tool := ext.Manifest.Tool("t")
	// The script is found on every run; the settings are read once per
	// `extensions run`, and once per load of the extensions by gemkit mcp
	// and the agent.
	b.Run("script/confined", func(b *testing.B) {
		for b.Loop() {
			if _, err := scriptPath(ext, tool); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("script/plain", func(b *testing.B) {
		for b.Loop() {
			real, err := filepath.EvalSymlinks(ext.Path(tool.Executable))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := os.Stat(real); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("settings/confined", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadSettings(dir, dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("settings/plain", func(b *testing.B) {
		for b.Loop() {
			for range 2 {
				f, err := os.Open(filepath.Join(dir, ".env"))
				if err != nil {
					b.Fatal(err)
				}
				sc := bufio.NewScanner(f)
				for sc.Scan() {
					_, _, _ = strings.Cut(sc.Text(), "=")
				}
				f.Close()
			}
		}
	})
}
