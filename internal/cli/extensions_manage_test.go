package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extview"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/golden"
)

// env is one test's home, workspace and helpers to run gemkit in them.
type env struct {
	t         testing.TB
	home, ws  string
	testdata  string
	replacers []string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	home := t.TempDir()
	ws := filepath.Join(home, "projects", "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	td, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	compat, _ := filepath.Abs("../extension/testdata/compat")
	e := &env{t: t, home: home, ws: ws, testdata: td}
	e.replacers = []string{ws, "$WORKSPACE", home, "$HOME", compat, "$COMPAT", td, "$TESTDATA"}
	return e
}

// run runs gemkit extensions with args; stdin is not a terminal, as in CI.
func (e *env) run(args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	return e.runWith(sandboxEnforcer{}, args...)
}

// runWith runs gemkit extensions with args through run, with enforcer
// standing in for the sandbox's probe.
func (e *env) runWith(enforcer extension.Enforcer, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	var out, errb bytes.Buffer
	a := newApp(Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	a.enforcer = enforcer
	// The person's home is the test's, for what gemkit keeps there
	// beside .gemini (the servers' data folders and kept catalogs):
	// never the home of whoever runs the tests, which tests running at
	// once would share.
	a.lookupEnv = func(k string) (string, bool) {
		if k == "HOME" {
			return e.home, true
		}
		return os.LookupEnv(k)
	}
	full := append([]string{"extensions", "--home", e.home, "--workspace", e.ws}, args...)
	code = run(context.Background(), full, a)
	return out.String(), errb.String(), code
}

func (e *env) mustRun(args ...string) string {
	e.t.Helper()
	out, errOut, code := e.run(args...)
	if code != ExitOK {
		e.t.Fatalf("gemkit extensions %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// scrub replaces the test's temporary paths so output can be compared
// with golden files.
func (e *env) scrub(s string) string {
	r := strings.NewReplacer(e.replacers...)
	return r.Replace(s)
}

// describeWith runs `extensions describe` with enforcer standing in for
// the sandbox's probe. The real probe's answers (and cost: it re-executes
// the running binary) vary with the machine; the wiring of the real probe
// is the sandbox's to test.
func (e *env) describeWith(enforcer extension.Enforcer, args ...string) (string, int) {
	e.t.Helper()
	out, _, code := e.runWith(enforcer, append([]string{"describe"}, args...)...)
	return out, code
}

// describe runs describe with fixed enforcement notes and scrubs paths.
func (e *env) describe(name string, flags ...string) string {
	e.t.Helper()
	out, code := e.describeWith(fixedEnforcer{}, append([]string{name}, flags...)...)
	if code != ExitOK {
		e.t.Fatalf("describe %s: exit %d", name, code)
	}
	return e.scrub(out)
}

// fixedEnforcer is a stand-in for the sandbox's probe with known answers,
// to test how describe renders them; the real probe's answers depend on
// the machine.
type fixedEnforcer struct{ err error }

func (f fixedEnforcer) Enforcement(_ context.Context, e *extension.Extension) ([]extension.EnforcementNote, error) {
	return []extension.EnforcementNote{
		{Permission: "filesystem.read", How: "Landlock allows reading " + e.Manifest.Name + "'s workspace", Enforced: true},
		{Permission: "network", How: "no network namespace on this kernel", Enforced: false},
	}, f.err
}

func TestDescribeRendersEnforcement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustRun("install", "testdata/extensions/code-analyzer", "--consent")
	for _, tc := range []struct {
		enforcer extension.Enforcer
		want     []string
	}{
		{fixedEnforcer{}, []string{"  - filesystem.read: Landlock allows reading code-analyzer's workspace (enforced)",
			"  - network: no network namespace on this kernel (NOT enforced)"}},
		{fixedEnforcer{err: errors.New("probe failed")}, []string{"  could not be determined: probe failed"}},
		{nil, []string{"  not reported: this build has no sandbox for extension tools"}},
	} {
		out, code := e.describeWith(tc.enforcer, "code-analyzer")
		if code != ExitOK {
			t.Fatalf("describe: exit %d", code)
		}
		for _, want := range tc.want {
			if !strings.Contains(out, "Enforcement on this machine\n") || !strings.Contains(out, want+"\n") {
				t.Errorf("describe lacks %q:\n%s", want, out)
			}
		}
	}
}

// extensionIDs matches Gemini CLI extension IDs, hashes of a source path
// that differs on every run.
var extensionIDs = regexp.MustCompile(`("id": "|ID: +)[0-9a-f]{64}`)

// checkGolden compares got, with extension IDs replaced by $ID, with
// testdata/golden/name (-update rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	got = extensionIDs.ReplaceAllString(got, "${1}$$ID")
	golden.Check(t, filepath.Join("testdata", "golden", name), []byte(got))
}

// copyDir copies a testdata folder so a test can turn it into a git
// repository or change it.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
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
	})
	if err != nil {
		t.Fatal(err)
	}
}

// gitRepoOf makes a git repository from a testdata folder and returns its
// folder and file:// URL.
func gitRepoOf(t *testing.T, src string) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), filepath.Base(src)+".git")
	copyDir(t, src, dir)
	gemkittest.Git(t, dir, "init", "--quiet")
	gemkittest.Git(t, dir, "add", "-A")
	gemkittest.Git(t, dir, "commit", "--quiet", "-m", "v1")
	return dir, "file://" + dir
}

func TestInstallRefusedWithoutTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, url := gitRepoOf(t, "testdata/extensions/code-analyzer")
	for _, args := range [][]string{{"install", url}, {"link", "testdata/extensions/code-analyzer"}} {
		out, errOut, code := e.run(args...)
		// Consent not given, with nobody to ask: a no (1), as
		// docs/extensions.md's exit codes say, not an error (2).
		if code != ExitNo || !strings.Contains(errOut, "--consent") || !strings.Contains(errOut, "not a terminal") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and a message naming --consent", args, code, errOut)
		}
		if out != "" {
			t.Errorf("%v printed %q", args, out)
		}
		// What --consent would agree to is shown before the refusal.
		for _, want := range []string{"read files in your workspace", "connect to https://linter-rules.example.com", "lintFile(file: string, strict?: boolean)"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%v: the refusal does not show %q:\n%s", args, want, errOut)
			}
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(e.home, ".gemini", "extensions")); len(entries) != 0 {
		t.Errorf("a refused install left %d entries", len(entries))
	}
}

// TestInstallNamesItsFlags: what the store refuses in an install request
// (its sub-folder, its ref) is said in the request's terms, and the
// command adds the flag that set it.
func TestInstallNamesItsFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nested := filepath.Join(t.TempDir(), "nested.git")
	copyDir(t, "testdata/extensions/code-analyzer", filepath.Join(nested, "ext"))
	gemkittest.Git(t, nested, "init", "--quiet")
	gemkittest.Git(t, nested, "add", "-A")
	gemkittest.Git(t, nested, "commit", "--quiet", "-m", "v1")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"install", "file://" + nested, "--consent"}, "if the extension is in a sub-folder of the repository, name that folder (--path)"},
		{[]string{"install", "file://" + nested, "--path", "../x", "--consent"}, `the sub-folder "../x" must be a folder inside the source (--path)`},
		{[]string{"install", "file://" + nested, "--path", "nope", "--consent"}, "has no folder nope (--path)"},
		{[]string{"install", "testdata/extensions/code-analyzer", "--ref", "main", "--consent"}, "a ref applies to git sources only, and testdata/extensions/code-analyzer is a local folder (--ref)"},
	} {
		if _, errOut, code := e.run(c.args...); code != ExitError || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args, code, errOut, c.want)
		}
	}
}

// installAll installs the full-featured extension from git and the
// compatibility set from local folders.
func installAll(t *testing.T, e *env) {
	t.Helper()
	repo, url := gitRepoOf(t, "testdata/extensions/code-analyzer")
	gemkittest.Git(t, repo, "tag", "v1.0.0")
	e.replacers = append([]string{url, "$REPO_URL"}, e.replacers...)
	_, errOut, code := e.run("install", url, "--ref", "v1.0.0", "--consent")
	if code != ExitOK {
		t.Fatalf("install: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Cloning", "read files in your workspace", "connect to https://linter-rules.example.com",
		"lintFile(file: string, strict?: boolean)", "rules (local: node", "GEMINI.md", "Consent given with --consent"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("install progress/consent on stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, name := range []string{"mcp-only", "context-only", "commands-and-context", "settings", "themes", "exclude-tools", "context-list", "migrated", "plan-and-unknown"} {
		e.mustRun("install", "../extension/testdata/compat/"+name, "--consent")
	}
}

func TestListAndDescribeGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	installAll(t, e)
	e.mustRun("disable", "night-themes", "--scope", "user")
	e.mustRun("disable", "old-name", "--scope", "workspace")
	checkGolden(t, "list.txt", e.scrub(e.mustRun("list")))
	checkGolden(t, "list.json", e.scrub(e.mustRun("list", "--json")))
	checkGolden(t, "describe-code-analyzer.txt", e.describe("code-analyzer"))
	checkGolden(t, "describe-code-analyzer.json", e.describe("code-analyzer", "--json"))
	checkGolden(t, "describe-image-gen.txt", e.describe("image-gen"))

	// The JSON is for scripts: check the parts they rely on.
	var items []extview.Item
	if err := json.Unmarshal([]byte(e.mustRun("list", "--json")), &items); err != nil {
		t.Fatal(err)
	}
	if len(items) != 10 {
		t.Fatalf("list --json has %d items, want 10", len(items))
	}
	byName := map[string]extview.Item{}
	for _, it := range items {
		byName[it.Name] = it
	}
	if it := byName["night-themes"]; it.Enabled.User || it.Enabled.Workspace {
		t.Errorf("night-themes disabled for the user but listed as %+v", it.Enabled)
	}
	if it := byName["old-name"]; !it.Enabled.User || it.Enabled.Workspace {
		t.Errorf("old-name disabled in the workspace but listed as %+v", it.Enabled)
	}
	if it := byName["code-analyzer"]; it.Source == nil || it.Source.Type != "git" || it.Source.Ref != "v1.0.0" || len(it.Tools) != 1 {
		t.Errorf("code-analyzer: %+v", it)
	}
	if _, code := e.describeWith(nil, "nope"); code != ExitError {
		t.Errorf("describe of a missing extension: exit %d", code)
	}
}

func TestValidateCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.mustRun("validate", "testdata/extensions/code-analyzer")
	if !strings.Contains(out, "is valid: code-analyzer 1.0.0") {
		t.Errorf("valid: %q", out)
	}
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, extension.ManifestFile), []byte(`{"name":"Bad Name","version":"1",
	  "permissions":{"filesystem":{"read":"none","write":"full"},"network":{"allowedHosts":["a b"]}},
	  "tools":[{"name":"t","description":"d","executable":"../x.py","runtime":"ruby","args":[{"name":"a","type":"map"}]}],
	  "docs":[{"name":"d","file":"nope.md"}]}`), 0o644)
	out, _, code := e.run("validate", bad)
	if code != ExitNo {
		t.Errorf("invalid manifest: exit %d, want %d", code, ExitNo)
	}
	for _, want := range []string{"7 problem(s)", "name:", "permissions.filesystem.write:", "permissions.network.allowedHosts[0]:",
		"tools[0].executable:", "tools[0].runtime:", "tools[0].args[0].type:", "docs[0].file:", "fix: "} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = e.run("validate", bad, "--json")
	var res struct {
		Valid    bool
		Problems []extension.Problem
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Valid || len(res.Problems) != 7 || code != ExitNo {
		t.Errorf("validate --json: %v %+v exit %d", err, res, code)
	}
	if _, errOut, code := e.run("validate", filepath.Join(bad, "missing")); code != ExitError || !strings.Contains(errOut, "does not exist") {
		t.Errorf("missing folder: exit %d %q", code, errOut)
	}
}

func TestNewTemplatesValidate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tmpl := range extension.Templates() {
		dir := filepath.Join(t.TempDir(), "x-"+tmpl.Name)
		e.mustRun("new", dir, tmpl.Name)
		e.mustRun("validate", dir)
	}
	dir := filepath.Join(t.TempDir(), "default")
	if out := e.mustRun("new", dir); !strings.Contains(out, "tools/count_words.py") {
		t.Errorf("default template: %s", out)
	}
	if _, errOut, code := e.run("new", filepath.Join(t.TempDir(), "y"), "cobol"); code != ExitError || !strings.Contains(errOut, "choose one of") {
		t.Errorf("unknown template: exit %d %q", code, errOut)
	}
}

func TestEnableDisableCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustRun("install", "../extension/testdata/compat/context-only", "--consent")
	out := e.mustRun("disable", "conductor")
	if !strings.Contains(out, "now: user disabled, workspace disabled") {
		t.Errorf("disable: %q", out)
	}
	out = e.mustRun("enable", "conductor", "--scope", "workspace")
	if !strings.Contains(out, "now: user disabled, workspace enabled") {
		t.Errorf("enable --scope workspace: %q", out)
	}
	if _, errOut, code := e.run("enable", "conductor", "--scope", "system"); code != ExitError || !strings.Contains(errOut, "use user or workspace") {
		t.Errorf("bad scope: exit %d %q", code, errOut)
	}
	if _, _, code := e.run("enable", "nope"); code != ExitError {
		t.Errorf("enable of a missing extension: exit %d", code)
	}
	// A name in other case finds the extension, and the answer is about
	// the rules stored under its real name.
	out = e.mustRun("disable", "CONDUCTOR", "--scope", "workspace")
	if !strings.Contains(out, "Disabled conductor in") || !strings.Contains(out, "now: user disabled, workspace disabled") {
		t.Errorf("disable CONDUCTOR --scope workspace: %q", out)
	}

	// The user scope is the home folder and below, so a workspace outside
	// it keeps its own answer, and gemkit says so.
	outside := t.TempDir()
	_, errOut, code := e.run("--workspace", outside, "enable", "conductor")
	if code != ExitOK || !strings.Contains(errOut, "outside it, so use --scope workspace") {
		t.Errorf("enable with a workspace outside home: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, _ := e.run("enable", "conductor"); strings.Contains(errOut, "outside") {
		t.Errorf("workspace under home got the outside note: %q", errOut)
	}
}

func TestUpdateCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo, url := gitRepoOf(t, "testdata/extensions/code-analyzer")
	e.mustRun("install", url, "--consent")

	out := e.mustRun("update", "code-analyzer")
	if !strings.Contains(out, "code-analyzer 1.0.0 is up to date") {
		t.Errorf("update with nothing new: %q", out)
	}
	manifest := filepath.Join(repo, extension.ManifestFile)
	data, _ := os.ReadFile(manifest)
	os.WriteFile(manifest, bytes.Replace(data, []byte(`"version": "1.0.0"`), []byte(`"version": "1.1.0"`), 1), 0o644)
	lint := filepath.Join(repo, "tools", "lint.py")
	code, _ := os.ReadFile(lint)
	os.WriteFile(lint, append(code, "\nprint('new code')\n"...), 0o644)
	gemkittest.Git(t, repo, "commit", "--quiet", "-am", "v1.1")
	// The same permissions, tools and MCP servers, but new code: consent
	// is asked again, naming the files, and without a terminal the update
	// is refused and the installed code stays.
	_, errOut, exit := e.run("update", "--all")
	if exit != ExitNo || !strings.Contains(errOut, "files: gemini-extension.json (changed), tools/lint.py (changed)") || !strings.Contains(errOut, "--consent") {
		t.Errorf("update of the code without a terminal: exit %d\n%s", exit, errOut)
	}
	installed := filepath.Join(e.home, ".gemini", "extensions", "code-analyzer", "tools", "lint.py")
	if data, _ := os.ReadFile(installed); strings.Contains(string(data), "new code") {
		t.Error("a refused update installed the new code")
	}
	if out, _, exit := e.run("consent", "code-analyzer"); exit != ExitOK || !strings.Contains(out, "to these permissions and these files") {
		t.Errorf("consent after a refused update: exit %d\n%s", exit, out)
	}
	out, errOut, exit = e.run("update", "--all", "--consent")
	if exit != ExitOK || !strings.Contains(out, "Updated code-analyzer 1.0.0 → 1.1.0") {
		t.Errorf("update: exit %d, %q\n%s", exit, out, errOut)
	}
	// With --consent nothing is asked: the consent text says where the
	// new files are, and nothing of agreeing after reading them.
	if !strings.Contains(errOut, "The new files are in") || strings.Contains(errOut, "before you agree") {
		t.Errorf("update --consent asks nothing, yet its words say otherwise:\n%s", errOut)
	}
	// consent covers the new code, agreed to just now.
	if out, _, exit := e.run("consent", "code-analyzer"); exit != ExitOK || !strings.Contains(out, "Consent: given "+time.Now().Format("2006-01-02")) {
		t.Errorf("consent after the update: exit %d\n%s", exit, out)
	}

	data, _ = os.ReadFile(manifest)
	data = bytes.Replace(data, []byte(`"read": "workspace"`), []byte(`"read": "home", "write": "workspace"`), 1)
	data = bytes.Replace(data, []byte(`"version": "1.1.0"`), []byte(`"version": "2.0.0"`), 1)
	os.WriteFile(manifest, data, 0o644)
	gemkittest.Git(t, repo, "commit", "--quiet", "-am", "v2")
	_, errOut, exit = e.run("update", "code-analyzer")
	if exit != ExitNo || !strings.Contains(errOut, "--consent") || !strings.Contains(errOut, "file read access: workspace → home") ||
		!strings.Contains(errOut, `Updating extension "code-analyzer" from version 1.1.0 to 2.0.0.`) ||
		strings.Contains(errOut, "update code-analyzer: update code-analyzer") {
		t.Errorf("update needing consent without a terminal: exit %d\n%s", exit, errOut)
	}
	if out := e.mustRun("list"); !strings.Contains(out, "1.1.0") {
		t.Errorf("a refused update changed the extension:\n%s", out)
	}
	out = e.mustRun("update", "code-analyzer", "--consent", "--json")
	var res []extension.UpdateResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || res[0].NewVersion != "2.0.0" || len(res[0].Changes) != 3 {
		t.Errorf("update --json: %v %+v", err, res)
	}
	if _, _, code := e.run("update"); code != ExitError {
		t.Errorf("update without names or --all: exit %d", code)
	}
	// Both given: the words say both were, not that neither was.
	if _, errOut, code := e.run("update", "code-analyzer", "--all"); code != ExitError || !strings.Contains(errOut, "not both") {
		t.Errorf("update with a name and --all: exit %d\n%s", code, errOut)
	}
}

func TestLinkAndUninstallCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dev := filepath.Join(t.TempDir(), "dev")
	copyDir(t, "testdata/extensions/code-analyzer", dev)
	out := e.mustRun("link", dev, "--consent")
	real, _ := filepath.EvalSymlinks(dev)
	if !strings.Contains(out, "Linked code-analyzer 1.0.0 → "+real) {
		t.Errorf("link: %q", out)
	}
	desc, _ := e.describeWith(nil, "code-analyzer")
	if !strings.Contains(desc, "Source:   link "+real) || !strings.Contains(desc, "rules (local: node "+real+"/rules-server.js)") {
		t.Errorf("describe of a linked extension:\n%s", desc)
	}
	// Installing the same extension from git while it is linked: update
	// cannot replace a link, so the hint is to uninstall it first.
	_, url := gitRepoOf(t, "testdata/extensions/code-analyzer")
	_, errOut, code := e.run("install", url, "--consent")
	if code != ExitError || !strings.Contains(errOut, "already linked to "+real) ||
		!strings.Contains(errOut, "`gemkit extensions uninstall code-analyzer` unlinks it first (the folder stays)") ||
		strings.Contains(errOut, "extensions update") {
		t.Errorf("install over a link: exit %d %q", code, errOut)
	}
	e.mustRun("install", "../extension/testdata/compat/themes", "--consent")
	out, errOut, code = e.run("uninstall", "code-analyzer", "missing", "night-themes")
	if code != ExitError || !strings.Contains(errOut, "missing") {
		t.Errorf("uninstall with one unknown name: exit %d %q", code, errOut)
	}
	if !strings.Contains(out, "Uninstalled code-analyzer") || !strings.Contains(out, "Uninstalled night-themes") {
		t.Errorf("uninstall: %q", out)
	}
	if _, err := os.Stat(filepath.Join(dev, extension.ManifestFile)); err != nil {
		t.Errorf("uninstalling a link removed its source: %v", err)
	}
	if out := e.mustRun("list"); !strings.Contains(out, "No extensions installed") {
		t.Errorf("list after uninstall: %q", out)
	}
}

func TestDescribeCompatShapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	installAll(t, e)
	for _, name := range []string{"conductor", "night-themes", "issue-tracker", "planner"} {
		checkGolden(t, "describe-"+name+".txt", e.describe(name))
	}
}

// TestManifestTextCannotReachTheTerminalRaw installs an extension whose
// manifest hides terminal escape sequences (erase the line, move up) and a
// bidirectional override in what gemkit prints, and checks that the
// consent text, list, describe and validate show them as visible escapes.
func TestManifestTextCannotReachTheTerminalRaw(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "sneaky")
	if err := os.MkdirAll(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tools", "t.sh"), []byte("echo hi\n"), 0o755)
	os.WriteFile(filepath.Join(dir, extension.ManifestFile), []byte(`{"name":"sneaky","version":"1.0\u001b[2K",
	  "description":"harmless\r\u001b[1A\u001b[2K  - no network access",
	  "permissions":{"network":{"allowedHosts":["api.example.com"]}},
	  "tools":[{"name":"t","description":"looks \u202eevil\u202c fine","executable":"tools/t.sh","runtime":"shell"}],
	  "mcpServers":{"m":{"command":"node\u001b[8m","args":["hidden"]}}}`), 0o644)
	out, errOut, code := e.run("install", dir, "--consent")
	if code != ExitOK {
		t.Fatalf("install: exit %d: %s", code, errOut)
	}
	list := e.mustRun("list")
	describe, _ := e.describeWith(nil, "sneaky")
	valid := e.mustRun("validate", dir)
	for name, text := range map[string]string{"install stdout": out, "consent text": errOut, "list": list, "describe": describe, "validate": valid} {
		if strings.ContainsAny(text, "\x1b\r\u202e") {
			t.Errorf("%s lets a raw control character through:\n%q", name, text)
		}
	}
	if !strings.Contains(errOut, `harmless\x0d\x1b[1A\x1b[2K  - no network access`) || !strings.Contains(errOut, "connect to api.example.com") {
		t.Errorf("consent text does not show the escapes visibly next to the real permissions:\n%s", errOut)
	}
	if !strings.Contains(describe, `local: node\x1b[8m hidden`) || !strings.Contains(describe, `looks \u202eevil\u202c fine`) {
		t.Errorf("describe:\n%s", describe)
	}
}

// TestWrongArgumentsShowUsage checks that a wrong number of arguments is
// answered with what the command takes, not only a count.
func TestWrongArgumentsShowUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"new"}, "usage: gemkit extensions new <folder> [template]"},
		{[]string{"new", "a", "b", "c"}, "usage: gemkit extensions new <folder> [template]"},
		{[]string{"install"}, "usage: gemkit extensions install <git-url|local-folder>"},
		{[]string{"uninstall"}, "usage: gemkit extensions uninstall <name>..."},
		{[]string{"list", "extra"}, "usage: gemkit extensions list"},
		{[]string{"describe"}, "usage: gemkit extensions describe <name>"},
		{[]string{"disable", "a", "b"}, "usage: gemkit extensions disable <name>"},
	} {
		out, errOut, code := e.run(tc.args...)
		if code != ExitError || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestConsentNotGivenIsANo: a refusal at the question and a consent
// nobody could be asked for end with ExitNo, wrapped or not; other
// errors do not.
func TestConsentNotGivenIsANo(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"no terminal", errNeedsConsent("link my-ext"), true},
		{"no terminal, wrapped", fmt.Errorf("update my-ext: %w", errNeedsConsent("update my-ext")), true},
		{"refused", extension.ErrConsentRefused, true},
		{"refused, wrapped", fmt.Errorf("its servers' packages were not updated: %w", extension.ErrConsentRefused), true},
		{"another error", errors.New("missing"), false},
	} {
		if got := consentNotGiven(c.err); got != c.want {
			t.Errorf("%s: consentNotGiven(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestUpdateToRef is the seventh tour's first finding: an extension
// installed at `--ref v0.1.0` (the docs' "what a user types") could not
// move to v0.2.0: update said "up to date" (it follows the ref it was
// installed at, as Gemini CLI's does), and install --ref v0.2.0 said
// "already installed; use update". install now names the way, and
// `update NAME --ref REF` moves it there, recording the ref later updates
// follow.
func TestUpdateToRef(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo, url := gitRepoOf(t, "testdata/extensions/code-analyzer")
	gemkittest.Git(t, repo, "tag", "v0.1.0")
	manifest := filepath.Join(repo, extension.ManifestFile)
	data, _ := os.ReadFile(manifest)
	os.WriteFile(manifest, bytes.Replace(data, []byte(`"version": "1.0.0"`), []byte(`"version": "2.0.0"`), 1), 0o644)
	gemkittest.Git(t, repo, "commit", "--quiet", "-am", "v0.2.0")
	gemkittest.Git(t, repo, "tag", "v0.2.0")

	e.mustRun("install", url, "--ref", "v0.1.0", "--consent")
	if out := e.mustRun("update", "code-analyzer"); !strings.Contains(out, "up to date") {
		t.Errorf("update at its ref: %q", out)
	}
	if _, errOut, code := e.run("install", url, "--ref", "v0.2.0", "--consent"); code == ExitOK || !strings.Contains(errOut, "`gemkit extensions update code-analyzer --ref v0.2.0`") {
		t.Errorf("install at another ref: exit %d\n%s", code, errOut)
	}
	if out := e.mustRun("update", "code-analyzer", "--ref", "v0.2.0", "--consent"); !strings.Contains(out, "1.0.0 → 2.0.0") {
		t.Errorf("update --ref: %q", out)
	}
	md, err := os.ReadFile(filepath.Join(e.home, ".gemini", "extensions", "code-analyzer", extension.InstallMetadataFile))
	if err != nil || !strings.Contains(string(md), `"ref": "v0.2.0"`) {
		t.Errorf("the install's ref: %s %v", md, err)
	}
	if _, errOut, code := e.run("update", "--all", "--ref", "v0.2.0"); code != ExitError || !strings.Contains(errOut, "name just that one") {
		t.Errorf("update --all --ref: exit %d\n%s", code, errOut)
	}
}
