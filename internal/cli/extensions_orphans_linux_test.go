package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOrphansAfterGeminiUninstall is the seventh tour's second finding:
// a switched extension uninstalled by Gemini CLI itself left its names in
// mcp.excluded, its hooks in Gemini CLI's settings, gemkit's records and
// its pinned packages; doctor offered `sandbox NAME --off`, which answered
// "not installed", and `gemkit extensions uninstall` removed the names but
// failed ("could not uninstall", exit 2). Now doctor names what is left,
// and its fix removes it all.
func TestOrphansAfterGeminiUninstall(t *testing.T) {
	h := newCompatHome(t)
	src := h.src("leftover")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json": `{"name": "leftover", "version": "1.0.0", "mcpServers": {"notes": {"command": "node", "args": ["${extensionPath}/s.js"]}}}`,
		"s.js":                  "process.stdin.resume();\n",
		"hooks/hooks.json":      `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "name": "greet", "command": "echo hi"}]}]}}`,
	})
	settings := filepath.Join(h.home, ".gemini", "settings.json")
	before, _ := os.ReadFile(settings)
	h.mustGem("extensions", "install", src, "--consent")
	h.mustKit("consent", "leftover", "--grant")
	h.mustKit("sandbox", "leftover")
	// What a pin keeps, as the switch of an npx server would have left it.
	pinned := filepath.Join(h.home, ".local", "share", "gemkit", "packages", "leftover", "pkg@1.0.0")
	writeFiles(t, pinned, map[string]string{"package.json": `{"name": "pkg"}`})
	h.mustGem("extensions", "uninstall", "leftover")

	doctor, _, _ := h.kit("doctor")
	if !strings.Contains(doctor, "leftover: is not installed") || !strings.Contains(doctor, "`gemkit extensions uninstall leftover` removes them") ||
		!strings.Contains(doctor, "the packages pinned for its servers") {
		t.Fatalf("doctor does not name the orphan:\n%s", doctor)
	}
	out := h.mustKit("uninstall", "leftover")
	if !strings.Contains(out, "leftover is not installed") || !strings.Contains(out, "removed its switch") {
		t.Errorf("uninstall of the orphan:\n%s", out)
	}
	if after, _ := os.ReadFile(settings); strings.Contains(string(after), "leftover") {
		t.Errorf("Gemini CLI's settings still name the extension:\n%s\nbefore the switch:\n%s", after, before)
	}
	if _, err := os.Stat(filepath.Dir(pinned)); !os.IsNotExist(err) {
		t.Errorf("the pinned packages are still there: %v", err)
	}
	if doctor, _, _ := h.kit("doctor"); strings.Contains(doctor, "leftover") {
		t.Errorf("doctor after the fix:\n%s", doctor)
	}
}
