package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
)

// TestRunFailsClosed: with nobody to ask (no companion, no terminal),
// `gemkit run` refuses edits unless --yes, and runs no tool whose
// extension lacks consent; paths outside the workspace are refused, even
// through a symbolic link. The model reads each refusal.
func TestRunFailsClosed(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(f.root, "outside.txt")
	os.WriteFile(outside, []byte("secret\n"), 0o644)
	os.Symlink(f.root, filepath.Join(f.ws, "link"))
	srv := startOpenAI(t,
		fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "content": "x\n"}),
		fakemodel.Call("read_file", map[string]any{"path": "../outside.txt"}),
		fakemodel.Call("read_file", map[string]any{"path": "link/outside.txt"}),
		fakemodel.Call("propose_edit", map[string]any{"path": "link/outside.txt", "content": "x\n"}),
		fakemodel.Text("refused"))
	tr, code, _ := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "edit")
	if code != 0 || tr.Status != "done" {
		t.Fatalf("exit %d %+v", code, tr)
	}
	c, _ := srv.Requests()[4].Chat()
	res := c.ToolResults()
	if len(res) != 4 || !strings.Contains(res[0], "--yes") || !strings.Contains(res[1], "outside the workspace") ||
		!strings.Contains(res[2], "outside the workspace") || !strings.Contains(res[3], "outside the workspace") {
		t.Errorf("results %q", res)
	}
	if got, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(got) != "alpha\nbeta\n" {
		t.Errorf("a.txt is %q", got)
	}
	if got, _ := os.ReadFile(outside); string(got) != "secret\n" {
		t.Errorf("outside.txt is %q", got)
	}

	// --yes writes, a new file with its folders too.
	srv = startOpenAI(t,
		fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "search": "alpha", "replace": "omega"}),
		fakemodel.Call("propose_edit", map[string]any{"path": "new/dir/b.txt", "content": "new\n"}),
		fakemodel.Text("written"))
	if tr, code, _ := f.run(t, "--no-ide", "--yes", "--base-url", srv.URL+"/v1", "-m", "m", "edit"); code != 0 || tr.Status != "done" {
		t.Fatalf("exit %d %+v", code, tr)
	}
	if got, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(got) != "omega\nbeta\n" {
		t.Errorf("a.txt is %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(f.ws, "new", "dir", "b.txt")); string(got) != "new\n" {
		t.Errorf("b.txt is %q", got)
	}

	// Consent voided by a change of permissions: the tool does not run.
	src := filepath.Join(f.root, "src", "demo")
	manifest := strings.Replace(demoManifest, `"read": "workspace"`, `"read": "home"`, 1)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(manifest), 0o644)
	srv = startOpenAI(t, fakemodel.Call("demo_count", map[string]any{"word": "w", "times": 1}), fakemodel.Text("no"))
	if tr, code, _ := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "count"); code != 0 || tr.Status != "done" {
		t.Fatalf("exit %d %+v", code, tr)
	}
	c, _ = srv.Requests()[1].Chat()
	if res := c.ToolResults(); len(res) != 1 || !strings.Contains(strings.ToLower(res[0]), "consent") {
		t.Errorf("results %q", res)
	}
}

// TestConfigFile: the model and endpoint come from
// $XDG_CONFIG_HOME/gemkit/config.json; flags override it; a typo in it is
// an error that names the file.
func TestConfigFile(t *testing.T) {
	f := newFixture(t)
	srv := startOpenAI(t, fakemodel.Text("from the config"), fakemodel.Text("from the flag"))
	cfgDir := filepath.Join(f.root, "config", "gemkit")
	os.MkdirAll(cfgDir, 0o755)
	cfg := `{"provider": "openai", "model": "configured", "baseURL": "` + srv.URL + `/v1", "maxTurns": 4}`
	os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(cfg), 0o644)
	if tr, code, _ := f.run(t, "--no-ide", "hi"); code != 0 || tr.Text != "from the config" {
		t.Fatalf("exit %d %+v", code, tr)
	}
	if tr, code, _ := f.run(t, "--no-ide", "-m", "flagged", "hi"); code != 0 || tr.Text != "from the flag" {
		t.Fatalf("exit %d %+v", code, tr)
	}
	reqs := srv.Requests()
	if reqs[0].Model != "configured" || reqs[1].Model != "flagged" {
		t.Errorf("models %q %q", reqs[0].Model, reqs[1].Model)
	}
	os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(`{"modle": "x"}`), 0o644)
	if _, code, stderr := f.runText(t, "--no-ide", "hi"); code != 2 || !strings.Contains(stderr, "config.json") || !strings.Contains(stderr, "modle") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
