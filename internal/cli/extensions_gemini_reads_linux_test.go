package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/golden"
)

// readsCases are the manifests of internal/extension/testdata/geminireads
// by name, each with what its comment says Gemini CLI and gemkit do
// with it ("installs" or "refuses").
func readsCases(t *testing.T) map[string]struct {
	files          map[string]string
	gemini, gemkit string
} {
	t.Helper()
	paths, err := filepath.Glob("../extension/testdata/geminireads/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	out := map[string]struct {
		files          map[string]string
		gemini, gemkit string
	}{}
	for _, p := range paths {
		ar := golden.ReadArchive(t, p)
		var gemini, gemkit string
		for line := range strings.Lines(ar.Comment) {
			key, val, _ := strings.Cut(strings.TrimSpace(line), ": ")
			switch key {
			case "gemini":
				gemini = val
			case "gemkit":
				gemkit = val
			}
		}
		if gemkit == "" {
			gemkit = gemini
		}
		files := map[string]string{}
		for _, s := range ar.Sections {
			files[s.Name] = s.Data
		}
		out[strings.TrimSuffix(filepath.Base(p), ".txtar")] = struct {
			files          map[string]string
			gemini, gemkit string
		}{files, gemini, gemkit}
	}
	return out
}

// TestGeminiCLIInstallsAlike installs every manifest of
// internal/extension/testdata/geminireads with the real Gemini CLI 0.61
// in one home and with gemkit in another: each installs or is refused
// as its case says (Gemini CLI's refusals are gemkit's; a key Gemini CLI
// ignores, a field of its own of an odd shape, a problem in gemkit's
// tools never stops gemkit's install), and in each home both tools then
// list what is installed alike. What gemkit cannot read as Gemini CLI
// does (servers given as a list) it refuses to install, and lists as
// unreadable when Gemini CLI installed it; one whose problems are only
// in gemkit's tools is listed as such.
func TestGeminiCLIInstallsAlike(t *testing.T) {
	t.Parallel()
	cases := readsCases(t)
	for _, by := range []string{"gemkit", "gemini"} {
		t.Run("installed by "+by, func(t *testing.T) {
			t.Parallel()
			h := newCompatHome(t)
			var installed []string
			for name, c := range cases {
				src := h.src("reads-" + name)
				writeFiles(t, src, c.files)
				want, out, errOut, code := c.gemkit, "", "", 0
				if by == "gemini" {
					want = c.gemini
					out, errOut, code = h.gem("extensions", "install", src, "--consent", "--skip-settings")
				} else {
					out, errOut, code = h.kit("install", src, "--consent")
				}
				if (code == 0) != (want == "installs") {
					t.Errorf("%s: %s install exit %d, want it to %s like that\n%s%s", name, by, code, want, out, errOut)
					continue
				}
				if code == 0 {
					var m map[string]any // "name" exactly, as JSON.parse
					must(t, json.Unmarshal([]byte(c.files["gemini-extension.json"]), &m))
					installed = append(installed, m["name"].(string))
				}
			}
			leftovers(t, h, by, installed)
			gem, kit := h.lists()
			if by == "gemini" {
				// Listed by gemkit as unreadable, with why, and left
				// out of the comparison.
				if e := kit["servers-list"]["error"]; e == nil || !strings.Contains(e.(string), "exactly as the agent does") {
					t.Errorf("gemkit lists the servers given as a list with the error %v", e)
				}
				delete(gem, "servers-list")
				delete(kit, "servers-list")
				installed = slicesWithout(installed, "servers-list")
			}
			compareLists(t, gem, kit, installed...)
			list := h.mustKit("list")
			for _, name := range installed {
				wantLine := name == "tool-error"
				if got := strings.Contains(list, "! "+name+": gemkit does not run its own tools"); got != wantLine {
					t.Errorf("%s: gemkit list says its tools do not run: %v, want %v\n%s", name, got, wantLine, list)
				}
			}
		})
	}
}

// leftovers checks that the extensions folder holds the installed
// extensions only. Gemini CLI 0.61 makes an extension's folder before
// it reads its settings (installOrUpdateExtension, then
// getMissingSettings), so a manifest it refuses for its settings leaves
// an empty folder, which it then skips at every start ("Skipping
// extension in ..."): such a folder is removed here, and only for it.
func leftovers(t *testing.T, h *compatHome, by string, installed []string) {
	t.Helper()
	dir := filepath.Join(h.home, ".gemini", "extensions")
	ents, err := os.ReadDir(dir)
	must(t, err)
	var got []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if inside, _ := os.ReadDir(filepath.Join(dir, e.Name())); by == "gemini" && len(inside) == 0 {
			must(t, os.Remove(filepath.Join(dir, e.Name())))
			continue
		}
		got = append(got, e.Name())
	}
	if len(got) != len(installed) {
		t.Errorf("the extensions folder holds %v after installing %v", got, installed)
	}
}

func slicesWithout(s []string, drop string) []string {
	var out []string
	for _, x := range s {
		if x != drop {
			out = append(out, x)
		}
	}
	return out
}
