package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConflictsAndValidateAgreeWithGemini checks what `list` and
// `validate` say where Gemini CLI 0.61 fails or drops something: a shared
// MCP server name is a warning (exit 0), a declared context file that is
// missing fails validate as it fails `gemini extensions validate`.
func TestConflictsAndValidateAgreeWithGemini(t *testing.T) {
	e := newEnv(t)
	src := t.TempDir()
	for _, name := range []string{"one", "two"} {
		writeFiles(t, filepath.Join(src, name), map[string]string{
			"gemini-extension.json": `{"name": "` + name + `", "version": "1.0.0", "mcpServers": {"shared": {"command": "node"}}}`})
		e.mustRun("install", filepath.Join(src, name), "--consent")
	}
	out := e.mustRun("list")
	if !strings.Contains(out, `! warning: the extensions one, two each define an MCP server called "shared"`) || !strings.Contains(out, "fix: disable all but one") {
		t.Errorf("list without the server warning:\n%s", out)
	}

	out = e.mustRun("doctor")
	if !strings.Contains(out, `warning: shared: the extensions one, two each define an MCP server called "shared"`) {
		t.Errorf("doctor without the server warning:\n%s", out)
	}
	e.mustRun("disable", "one")
	copyTree(t, filepath.Join(e.home, ".gemini", "extensions", "one"), filepath.Join(e.home, ".gemini", "extensions", "one-copy"))
	out, _, code := e.run("doctor")
	if code != ExitNo || !strings.Contains(out, "error: one: 2 folders hold an extension called \"one\"") || !strings.Contains(out, "uninstall one-copy") {
		t.Errorf("doctor with a duplicate: exit %d\n%s", code, out)
	}
	e.mustRun("uninstall", "one-copy")
	if en := e.mustRun("describe", "one"); !strings.Contains(en, "Enabled:  user disabled, workspace disabled") {
		t.Errorf("removing the copy changed the original:\n%s", en)
	}

	dir := filepath.Join(src, "ctx")
	writeFiles(t, dir, map[string]string{"gemini-extension.json": `{"name": "ctx", "version": "1.0.0", "contextFileName": ["HERE.md", "GONE.md"]}`, "HERE.md": "x"})
	out, _, code = e.run("validate", dir)
	if code != ExitNo || !strings.Contains(out, `contextFileName[1]: "GONE.md" does not exist`) || strings.Contains(out, "HERE.md\" does not") {
		t.Errorf("validate with a missing context file: exit %d\n%s", code, out)
	}
	// A missing default GEMINI.md is fine for both tools.
	must(t, os.Remove(filepath.Join(dir, "HERE.md")))
	writeFiles(t, dir, map[string]string{"gemini-extension.json": `{"name": "ctx", "version": "1.0.0"}`})
	e.mustRun("validate", dir)
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	must(t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, fi.Mode().Perm())
	}))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
