package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// TestStaleRefusalsGone: refusals belong to the extension as it is.
// After uninstall and a new link whose server asks for nothing, doctor
// and describe no longer say the old version's refusal (the file lost
// it at the uninstall, another extension's kept); a new consent, or a
// changed manifest (an install by Gemini CLI, which gemkit does not
// see), leaves out every refusal from before.
func TestStaleRefusalsGone(t *testing.T) {
	e, src, path, keep := switchedSrvExt(t, "link")
	// What the old version's server was refused, as gemkit mcp keeps
	// it, and another extension's; both after the consent to it.
	agreed := time.Now().Add(-time.Hour)
	setConsentTime(t, e.home, "srv-ext", agreed)
	manifest := filepath.Join(src, "gemini-extension.json")
	os.Chtimes(manifest, agreed, agreed)
	registry, other := registryRefusals(agreed.Add(30 * time.Minute))
	keep(registry, other)
	said := "the host registry.npmjs.org: name looked up without the sandbox's proxy; host not allowed"
	if out := e.mustRun("doctor"); !strings.Contains(out, "srv-ext: extension srv-ext's MCP server memory was refused") || !strings.Contains(out, said) {
		t.Fatalf("doctor does not tell of the refusal:\n%s", out)
	}

	// Uninstalled: the file keeps only the other extension's.
	e.mustRun("uninstall", "srv-ext")
	rs, err := extmcp.ReadRefusals(path)
	if err != nil || len(rs) != 1 || rs[0].Extension != "other-ext" {
		t.Fatalf("after uninstall the file keeps %+v, %v", rs, err)
	}
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "srv-ext")
	for _, args := range [][]string{{"doctor"}, {"describe", "srv-ext"}} {
		if out := e.mustRun(args...); strings.Contains(out, said) {
			t.Errorf("%v after a new link tells of the old refusal:\n%s", args, out)
		}
	}

	// Put back by a gemkit mcp that ran meanwhile: shown while the
	// extension is as it was, gone after a new consent; and after a
	// change of its manifest.
	for _, c := range []struct {
		name   string
		change func()
	}{
		{"a new consent", func() { e.mustRun("consent", "srv-ext", "--revoke"); e.mustRun("consent", "srv-ext", "--grant") }},
		{"a changed manifest", func() { os.Chtimes(manifest, time.Now(), time.Now()) }},
	} {
		setConsentTime(t, e.home, "srv-ext", agreed)
		os.Chtimes(manifest, agreed, agreed)
		keep(registry)
		if out := e.mustRun("doctor"); !strings.Contains(out, said) {
			t.Fatalf("%s: doctor does not tell of the refusal before:\n%s", c.name, out)
		}
		c.change()
		if out := e.mustRun("doctor"); strings.Contains(out, said) {
			t.Errorf("after %s doctor tells of the refusal from before:\n%s", c.name, out)
		}
	}
}

// TestUpdateForgetsRefusals: an update that brings a new version drops
// what the sandbox refused the old one's servers from the file gemkit
// mcp keeps them in, and keeps another extension's; an update that
// finds nothing new keeps them.
func TestUpdateForgetsRefusals(t *testing.T) {
	e, src, path, keep := switchedSrvExt(t, "install")
	keep(registryRefusals(time.Now()))
	extensions := func() []string {
		t.Helper()
		rs, err := extmcp.ReadRefusals(path)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rs {
			names = append(names, r.Extension)
		}
		return names
	}

	if out := e.mustRun("update", "srv-ext"); !strings.Contains(out, "up to date") {
		t.Fatalf("update with nothing new: %q", out)
	}
	if got := extensions(); !slices.Equal(got, []string{"srv-ext", "other-ext"}) {
		t.Errorf("an update that found nothing new left the refusals of %v", got)
	}
	manifest := filepath.Join(src, "gemini-extension.json")
	data, _ := os.ReadFile(manifest)
	os.WriteFile(manifest, bytes.Replace(data, []byte(`"version": "1.0.0"`), []byte(`"version": "1.1.0"`), 1), 0o644)
	if out := e.mustRun("update", "srv-ext", "--consent"); !strings.Contains(out, "1.0.0 → 1.1.0") {
		t.Fatalf("update to 1.1.0: %q", out)
	}
	if got := extensions(); !slices.Equal(got, []string{"other-ext"}) {
		t.Errorf("after the update the file keeps the refusals of %v, want other-ext's alone", got)
	}
}

// switchedSrvExt is srv-ext's source, added with `gemkit extensions
// how` (link or install) and consent, and switched, in a new env whose
// HOME is where gemkit mcp keeps the refusals, in the file path; keep
// writes rs there as gemkit mcp keeps them.
func switchedSrvExt(t *testing.T, how string) (e *env, src, path string, keep func(rs ...extmcp.Refusal)) {
	t.Helper()
	e = newEnv(t)
	t.Setenv("HOME", e.home)
	src = srvExt(t)
	e.mustRun(how, src, "--consent")
	e.mustRun("sandbox", "srv-ext")
	path, err := extmcp.RefusalsPath(map[string]string{"HOME": e.home})
	if err != nil {
		t.Fatal(err)
	}
	return e, src, path, func(rs ...extmcp.Refusal) {
		t.Helper()
		b, _ := json.Marshal(rs)
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// registryRefusals are a refusal of the npm registry to srv-ext's
// server in its run started at start, and the same of other-ext's.
func registryRefusals(start time.Time) (mine, other extmcp.Refusal) {
	mine = extmcp.Refusal{Extension: "srv-ext", Server: "memory", Start: start, At: start, Host: "registry.npmjs.org", Lookup: true,
		Reason: "name looked up without the sandbox's proxy; host not allowed", Allow: "gemkit extensions sandbox srv-ext --allow-host registry.npmjs.org"}
	other = mine
	other.Extension, other.Allow = "other-ext", "gemkit extensions sandbox other-ext --allow-host registry.npmjs.org"
	return mine, other
}

// setConsentTime sets when the consent to name was given, in its record.
func setConsentTime(t *testing.T, home, name string, at time.Time) {
	t.Helper()
	p := filepath.Join(home, ".gemini", "gemkit", "consent.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var recs map[string]any
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	recs["extensions"].(map[string]any)[name].(map[string]any)["grantedAt"] = at.UTC().Format(time.RFC3339)
	b, _ = json.Marshal(recs)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRefusalNamingNothing: a refusal that names no host, path or Unix
// socket, as a gemkit before the fix kept for a hook's refused write, is
// not shown, nor kept again.
func TestRefusalNamingNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refusals.json")
	start := time.Now()
	empty := extmcp.Refusal{Extension: "hk", Hook: "writer", Start: start, At: start, Reason: sandbox.WriteWorkspace, Count: 1}
	b, _ := json.Marshal([]extmcp.Refusal{empty})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if rs, err := extmcp.ReadRefusals(path); err != nil || len(rs) != 0 {
		t.Errorf("read %+v, %v; want none", rs, err)
	}
	if err := extmcp.KeepRefusals(path, empty); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "writer") {
		t.Errorf("kept a refusal naming nothing:\n%s", b)
	}
}
