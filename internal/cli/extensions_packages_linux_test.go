package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/npmregistrytest"
	"github.com/gemkit/gemkit/internal/pkgrun"
)

// helloManifest starts its server as context7's published manifest
// does: `npx -y` and a bare package name, the newest.
const helloManifest = `{"name": "hello", "version": "1.0.0", "description": "A server started by npx.",
 "mcpServers": {"hello": {"command": "npx", "args": ["-y", "hello-mcp", "--stdio"]}}}`

// publishHello serves hello-mcp at ver (an MCP server of one tool,
// miniServer: the switch lists it), depending on dep-a ^1.0.0, and
// dep-a at depVer.
func publishHello(r *npmregistrytest.Registry, ver, depVer string) {
	r.Publish(map[string]string{
		"package.json": `{"name": "dep-a", "version": "` + depVer + `", "main": "index.js"}`,
		"index.js":     "exports.v = '" + depVer + "';\n",
	})
	r.Publish(map[string]string{
		"package.json": `{"name": "hello-mcp", "version": "` + ver + `", "bin": {"hello-mcp": "server.js"}, "dependencies": {"dep-a": "^1.0.0"}}`,
		"server.js":    "#!/usr/bin/env node\n" + strings.Replace(miniServer, `version: "1"`, `version: "`+ver+`"`, 1),
	})
}

// pkgEnv is a person whose npm configuration names a loopback registry,
// running the real gemkit binary.
type pkgEnv struct {
	t             *testing.T
	bin, home, ws string
	reg           *npmregistrytest.Registry
	// user, when set, runs the commands as that user (unprivileged).
	user []string
}

func newPkgEnv(t *testing.T, manifest string) *pkgEnv {
	t.Helper()
	gemkittest.SkipShort(t, "installs npm packages in gemkit's sandbox from a loopback registry")
	e := &pkgEnv{t: t, bin: gemkittest.Gemkit(t), home: t.TempDir(), reg: npmregistrytest.New(t, nil)}
	e.ws = filepath.Join(e.home, "ws")
	src := filepath.Join(e.home, "src", "hello")
	for _, d := range []string{e.ws, src} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(e.home, ".npmrc"), []byte("registry="+e.reg.URL+"\nfetch-retries=0\n"), 0o600)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(manifest), 0o644)
	e.must("extensions", "link", src, "--consent")
	return e
}

func (e *pkgEnv) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(e.bin, args...)
	if len(e.user) > 0 {
		cmd = exec.Command(e.user[0], append(append(e.user[1:], e.bin), args...)...)
	}
	cmd.Dir = e.ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.home, "LANG=C.UTF-8", "TMPDIR=" + os.TempDir()}
	return cmd
}

func (e *pkgEnv) run(args ...string) (string, error) {
	out, err := e.cmd(args...).CombinedOutput()
	return string(out), err
}

func (e *pkgEnv) must(args ...string) string {
	e.t.Helper()
	out, err := e.run(args...)
	if err != nil {
		e.t.Fatalf("gemkit %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// choice is the recorded choice for hello, and whether consent to it as
// it is now holds.
func (e *pkgEnv) choice() (extension.ServerChoice, bool) {
	e.t.Helper()
	st := extension.OpenStore(e.home)
	c, err := st.ServerChoice("hello")
	if err != nil {
		e.t.Fatal(err)
	}
	in, err := st.Get("hello")
	if err != nil || in.Extension == nil {
		e.t.Fatal(err)
	}
	state, err := st.Consent(in.Extension)
	if err != nil {
		e.t.Fatal(err)
	}
	return c, state.Granted
}

// trees are the entries of hello's folder of trees but its lock and its
// npm cache.
func (e *pkgEnv) trees() []string {
	entries, _ := os.ReadDir(filepath.Join(pkgrun.Root(e.home), "hello"))
	var out []string
	for _, d := range entries {
		if d.Name() != ".lock" && d.Name() != ".npm-cache" {
			out = append(out, d.Name())
		}
	}
	return out
}

// TestSwitchPinsPackage: switching an extension whose server starts with
// `npx -y pkg` installs the newest version once, shows it, with what
// Gemini CLI would do instead, and records it in the consent; switching
// again or agreeing again installs nothing. A new version in the
// registry is pinned only by update, which shows what changed and is
// refused without consent, leaving the pin and its tree as they were;
// agreed to, it replaces them. Uninstalling removes the trees.
func TestSwitchPinsPackage(t *testing.T) {
	e := newPkgEnv(t, helloManifest)
	publishHello(e.reg, "1.0.0", "1.0.0")
	// A project's npm configuration, which a tool may write, is never
	// read: this one names a registry that answers nothing.
	os.WriteFile(filepath.Join(e.ws, ".npmrc"), []byte("registry=http://127.0.0.1:9/\n"), 0o644)
	out := e.must("extensions", "sandbox", "hello")
	for _, want := range []string{
		"Pinning the packages hello's servers fetch through a package runner:",
		"Its servers' packages, pinned: gemkit runs each from its tree, never from the registry. Gemini CLI, with the same manifest, runs the runner itself at each start: it fetches the package from the registry (for a bare name, the newest that runs on your node; for @latest, the latest) with your rights",
		"- hello (npx -y hello-mcp --stdio): hello-mcp 1.0.0 installed, the newest",
		"Installing hello-mcp (the newest) for hello from " + e.reg.URL + " in gemkit's sandbox (no network but the registry, install scripts off):",
		"installed hello-mcp 1.0.0: 2 packages",
		"hello (local: npx -y hello-mcp --stdio): switched to gemkit",
		"pinned: it runs hello-mcp 1.0.0 (the newest when pinned; 2 packages",
		"from the tree gemkit installed from " + e.reg.URL,
		"Switched: Gemini CLI no longer starts hello",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the switch does not say %q:\n%s", want, out)
		}
	}
	c, granted := e.choice()
	pin := c.Packages["hello"]
	if pin.Version != "1.0.0" || pin.Request != "hello-mcp" || pin.Runner != "npx" || !granted || len(e.trees()) != 1 {
		t.Fatalf("after the switch: pin %+v, consent %v, trees %v", pin, granted, e.trees())
	}

	publishHello(e.reg, "1.1.0", "1.1.0")
	for _, args := range [][]string{{"extensions", "sandbox", "hello"}, {"extensions", "consent", "hello", "--grant"}} {
		if out := e.must(args...); strings.Contains(out, "Installing") {
			t.Errorf("%v installed again:\n%s", args, out)
		}
		if c, granted := e.choice(); c.Packages["hello"].Version != "1.0.0" || !granted {
			t.Errorf("after %v: %+v, consent %v", args, c.Packages["hello"], granted)
		}
	}

	out, err := e.run("extensions", "update", "hello")
	if err == nil || !strings.Contains(out, "- hello (npx -y hello-mcp --stdio): hello-mcp 1.1.0 installed, the newest") ||
		!strings.Contains(out, "changed since you agreed: hello-mcp 1.0.0 → 1.1.0; packages: 2 changed (dep-a 1.0.0 → 1.1.0, hello-mcp 1.0.0 → 1.1.0)") ||
		!strings.Contains(out, "--consent") {
		t.Errorf("update without consent: %v\n%s", err, out)
	}
	if c, granted := e.choice(); c.Packages["hello"].Tree != pin.Tree || c.Packages["hello"].Version != "1.0.0" || !granted || len(e.trees()) != 1 {
		t.Errorf("the refused update changed the pin: %+v, consent %v, trees %v", c.Packages["hello"], granted, e.trees())
	}
	out = e.must("extensions", "update", "hello", "--consent")
	if !strings.Contains(out, "Updated hello's servers' packages: hello hello-mcp 1.0.0 → 1.1.0") {
		t.Errorf("update --consent:\n%s", out)
	}
	c, granted = e.choice()
	if c.Packages["hello"].Version != "1.1.0" || !granted || len(e.trees()) != 1 || c.Packages["hello"].Tree == pin.Tree {
		t.Errorf("after the update: %+v, consent %v, trees %v", c.Packages["hello"], granted, e.trees())
	}
	updatesWithNothingNewAndNewDependency(t, e)
	// The manifest, edited, asks for another version: not pinned, so
	// not started, and doctor says so with the command that pins it.
	src := filepath.Join(e.home, "src", "hello")
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(strings.Replace(helloManifest, `"hello-mcp"`, `"hello-mcp@1.0.0"`, 1)), 0o644)
	out, _ = e.run("extensions", "doctor")
	if !strings.Contains(out, "its MCP server hello (npx -y hello-mcp@1.0.0 --stdio) fetches hello-mcp@1.0.0 through a package runner, and gemkit has not pinned it for what the manifest asks now") ||
		!strings.Contains(out, "`gemkit extensions sandbox hello` installs it once") {
		t.Errorf("doctor does not tell of the server left unpinned:\n%s", out)
	}
	for _, args := range [][]string{{"extensions", "list"}, {"extensions", "describe", "hello"}} {
		if out, _ := e.run(args...); !strings.Contains(out, "NOT SERVED") || !strings.Contains(out, "has not pinned it for what the manifest asks now") {
			t.Errorf("%v does not tell of the server left unpinned:\n%s", args, out)
		}
	}
	e.must("extensions", "uninstall", "hello")
	if _, err := os.Stat(filepath.Join(pkgrun.Root(e.home), "hello")); err == nil {
		t.Error("uninstall left the extension's trees")
	}
}

// updatesWithNothingNewAndNewDependency: the pinned hello updated with
// nothing new resolves its tree from the packages' metadata and fetches
// no tarball; a dependency's new version in its range, the package's own
// the same, is resolved anew, installed, and asked for.
func updatesWithNothingNewAndNewDependency(t *testing.T, e *pkgEnv) {
	t.Helper()
	asked := len(e.reg.Requests())
	out := e.must("extensions", "update", "hello")
	for _, want := range []string{
		"Asking " + e.reg.URL + " what hello-mcp (the newest) for hello installs now, in gemkit's sandbox (no network but the registry, the packages' metadata only):",
		"resolved hello-mcp 1.1.0: 2 packages",
		"hello's servers' packages are up to date: hello hello-mcp 1.1.0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("update with nothing new does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Installing") || len(e.trees()) != 1 {
		t.Errorf("update with nothing new installed again (trees %v):\n%s", e.trees(), out)
	}
	for _, r := range e.reg.Requests()[asked:] {
		if strings.HasSuffix(r, ".tgz") {
			t.Errorf("update with nothing new fetched %s", r)
		}
	}
	// A dependency's new version in its range, the package's own the
	// same: resolved anew, installed, and asked for.
	e.reg.Publish(map[string]string{
		"package.json": `{"name": "dep-a", "version": "1.2.0", "main": "index.js"}`,
		"index.js":     "exports.v = '1.2.0';\n",
	})
	out, err := e.run("extensions", "update", "hello")
	if err == nil || !strings.Contains(out, "changed since you agreed: hello-mcp 1.1.0, the same version; packages: 1 changed (dep-a 1.1.0 → 1.2.0)") {
		t.Errorf("update of a dependency without consent: %v\n%s", err, out)
	}
	if c, granted := e.choice(); c.Packages["hello"].Version != "1.1.0" || !granted || len(e.trees()) != 1 {
		t.Errorf("the refused update changed the pin: %+v, consent %v, trees %v", c.Packages["hello"], granted, e.trees())
	}
	e.must("extensions", "update", "hello", "--consent")
	if out := e.must("extensions", "describe", "hello"); !strings.Contains(out, "hello: pinned: it runs hello-mcp 1.1.0") {
		t.Errorf("describe does not say what the server runs:\n%s", out)
	}
}

// TestSwitchInterrupted: Ctrl-C while the install fetches a tarball
// ends the switch at once, leaving nothing switched, pinned or
// installed, and Gemini CLI's settings as they were.
func TestSwitchInterrupted(t *testing.T) {
	e := newPkgEnv(t, helloManifest)
	publishHello(e.reg, "1.0.0", "1.0.0")
	reached, release := e.reg.Hold("hello-mcp")
	defer release()
	cmd := e.cmd("extensions", "sandbox", "hello")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the install never asked for the tarball:\n%s", out.String())
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if err == nil || !strings.Contains(out.String(), "not switched: hello's MCP server hello: the install of hello-mcp was interrupted: nothing of it was kept") {
		t.Errorf("the interrupted switch: %v\n%s", err, out.String())
	}
	if c, _ := e.choice(); c.Switched || len(c.Packages) > 0 {
		t.Errorf("the interrupted switch recorded %+v", c)
	}
	if trees := e.trees(); len(trees) != 0 {
		t.Errorf("the interrupted switch left %v", trees)
	}
	if _, err := os.Stat(geminisettings.Path(e.home)); err == nil {
		t.Error("the interrupted switch wrote Gemini CLI's settings")
	}
}

// TestSwitchInstallScripts: a package with an install script is pinned
// with the script not run, and the switch says so with the flag that
// lets it run; with the flag, it is installed again with the script run
// in the install's sandbox, which the consent covers.
func TestSwitchInstallScripts(t *testing.T) {
	e := newPkgEnv(t, strings.Replace(helloManifest, "hello-mcp", "scripted-mcp", 1))
	e.reg.Publish(map[string]string{
		"package.json": `{"name": "scripted-mcp", "version": "1.0.0", "bin": "server.js", "scripts": {"postinstall": "node -e \"require('fs').writeFileSync('ran.txt', 'ran')\""}}`,
		"server.js":    "#!/usr/bin/env node\n",
	})
	out := e.must("extensions", "sandbox", "hello")
	if !strings.Contains(out, "scripted-mcp@1.0.0 has install scripts, which did not run: the server may not work without them. To let them run (after npm fetched the packages, in a sandbox of their own with no network and none of your npm configuration): gemkit extensions sandbox hello --allow-install-scripts") {
		t.Errorf("the switch does not tell of the install script:\n%s", out)
	}
	c, _ := e.choice()
	ran := filepath.Join(c.Packages["hello"].Tree, "node_modules", "scripted-mcp", "ran.txt")
	if _, err := os.Stat(ran); err == nil {
		t.Error("the install script ran")
	}
	out = e.must("extensions", "sandbox", "hello", "--allow-install-scripts")
	c, granted := e.choice()
	p := c.Packages["hello"]
	if !p.ScriptsRun || !c.InstallScripts || !granted || !strings.Contains(out, "its install scripts ran, in the install's sandbox, as you allowed") {
		t.Errorf("with --allow-install-scripts: %+v, consent %v\n%s", p, granted, out)
	}
	if b, err := os.ReadFile(filepath.Join(p.Tree, "node_modules", "scripted-mcp", "ran.txt")); err != nil || string(b) != "ran" {
		t.Errorf("the allowed install script did not run: %q %v", b, err)
	}
}

// TestSwitchPinsAgentServer: a server an extension's sub-agent declares
// with npx, which the switch takes from Gemini CLI like the manifest's,
// is pinned too, under its label (agent/server).
func TestSwitchPinsAgentServer(t *testing.T) {
	e := newPkgEnv(t, `{"name": "hello", "version": "1.0.0", "description": "An agent's server started by npx."}`)
	publishHello(e.reg, "1.0.0", "1.0.0")
	src := filepath.Join(e.home, "src", "hello")
	os.MkdirAll(filepath.Join(src, "agents"), 0o755)
	os.WriteFile(filepath.Join(src, "agents", "greeter.md"), []byte("---\nname: greeter\ndescription: Greets\nmcp_servers:\n  hi:\n    command: npx\n    args: [\"-y\", \"hello-mcp\"]\n---\nGreet.\n"), 0o644)
	e.must("extensions", "consent", "hello", "--grant")
	out := e.must("extensions", "sandbox", "hello")
	if !strings.Contains(out, "Installing hello-mcp (the newest) for greeter/hi from") || !strings.Contains(out, "- greeter/hi (npx -y hello-mcp): hello-mcp 1.0.0 installed, the newest") {
		t.Errorf("the switch does not pin the agent's server:\n%s", out)
	}
	if c, granted := e.choice(); c.Packages["greeter/hi"].Version != "1.0.0" || !granted {
		t.Errorf("after the switch: %+v, consent %v", c.Packages, granted)
	}
}

// TestSwitchPinsBunx: a server started with `bunx pkg` runs its pinned
// package's program as `npx pkg` does (with node): the switch serves it
// on a machine without Bun, where it had refused it because bunx was
// not on PATH (after installing the package), and list and doctor say
// it is served.
func TestSwitchPinsBunx(t *testing.T) {
	if p, err := exec.LookPath("bunx"); err == nil {
		t.Skipf("bunx is installed (%s): the case is a machine without it, as CI's is (scripts/setup-and-test installs no Bun)", p)
	}
	e := newPkgEnv(t, strings.Replace(helloManifest, `"command": "npx", "args": ["-y", "hello-mcp", "--stdio"]`, `"command": "bunx", "args": ["hello-mcp", "--stdio"]`, 1))
	publishHello(e.reg, "1.0.0", "1.0.0")
	out := e.must("extensions", "sandbox", "hello")
	for _, want := range []string{
		"- hello (bunx hello-mcp --stdio): hello-mcp 1.0.0 installed, the newest",
		"Switched: Gemini CLI no longer starts hello",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the switch does not say %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{{"extensions", "list"}, {"extensions", "describe", "hello"}, {"extensions", "doctor"}} {
		if out, _ := e.run(args...); strings.Contains(out, "NOT SERVED") || strings.Contains(out, "would not start") {
			t.Errorf("%v says the server is not served:\n%s", args, out)
		}
	}
}

// TestSwitchPinsAgainAfterTreeRemoved: a pinned tree removed by hand is
// told by doctor and list with the command that pins it again; that
// command installs it again and pins the new tree, where it kept the
// old pin (its tree gone) because the registry had nothing new, and said
// the server was served.
func TestSwitchPinsAgainAfterTreeRemoved(t *testing.T) {
	e := newPkgEnv(t, helloManifest)
	publishHello(e.reg, "1.0.0", "1.0.0")
	e.must("extensions", "sandbox", "hello")
	c, _ := e.choice()
	old := c.Packages["hello"].Tree
	if err := os.RemoveAll(old); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"extensions", "doctor"}, {"extensions", "list"}} {
		out, _ := e.run(args...)
		if !strings.Contains(out, "the package pinned for its MCP server hello (hello-mcp 1.0.0) is no longer in "+old+", so gemkit mcp cannot start it") {
			t.Errorf("%v does not tell of the removed tree:\n%s", args, out)
		}
	}
	if out, _ := e.run("extensions", "doctor"); !strings.Contains(out, "`gemkit extensions sandbox hello` pins it again") {
		t.Errorf("doctor gives no fix:\n%s", out)
	}
	out := e.must("extensions", "sandbox", "hello")
	if !strings.Contains(out, "the tree pinned before is no longer there ("+old+"): installed again") {
		t.Errorf("the switch does not say the tree was installed again:\n%s", out)
	}
	c, granted := e.choice()
	if p := c.Packages["hello"]; p.Tree == old || !granted || !treeThere(p.Tree) || len(e.trees()) != 1 {
		t.Errorf("after pinning again: %+v, consent %v, trees %v", p, granted, e.trees())
	}
	for _, args := range [][]string{{"extensions", "doctor"}, {"extensions", "list"}} {
		if out, _ := e.run(args...); strings.Contains(out, "no longer in") || strings.Contains(out, "NOT SERVED") {
			t.Errorf("%v still tells of a missing tree:\n%s", args, out)
		}
	}
}

// TestSwitchNoticesChangedTree: a pinned tree changed after the person
// agreed to it, by any process of theirs (a byte added to a file of it,
// the tree or the extension's folder of trees swapped for a link to a
// copy of it), is told by doctor and list with the fix, and neither the
// switch nor consent agrees to it again: each installs it again from
// the registry and says why, or, with a link on the way where it
// installs, refuses in words; they said "pinned as before" and recorded
// consent to the changed tree. As root and as uid 65534.
func TestSwitchNoticesChangedTree(t *testing.T) {
	for _, tc := range changedTrees {
		for _, unprivileged := range []bool{false, true} {
			name := tc.name
			if unprivileged {
				name += ", as uid 65534"
			}
			t.Run(name, func(t *testing.T) { tc.run(t, unprivileged) })
		}
	}
}

// againWords are what the switch and consent say of a changed tree
// they install again.
const againWords = "changed since you agreed: hello-mcp 1.0.0, the same version; the tree pinned before is not as you agreed to it ("

// changedTree is a case of TestSwitchNoticesChangedTree: the tree
// changed by change, told by doctor and list in words with want, and
// the command args then saying after.
type changedTree struct {
	name        string
	change      func(t *testing.T, tree string)
	args        []string
	want, after string
}

var changedTrees = []changedTree{
	{"a byte added", func(t *testing.T, tree string) {
		f, err := os.OpenFile(filepath.Join(tree, "node_modules", "hello-mcp", "package.json"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(" ")
		f.Close()
	}, []string{"extensions", "sandbox", "hello"}, "changed since it was pinned", againWords},
	{"the tree swapped for a link", swapForLink, []string{"extensions", "consent", "hello", "--grant"},
		"is a link, not the folder gemkit installed the tree in", againWords},
	{"the folder of trees swapped for a link", func(t *testing.T, tree string) { swapForLink(t, filepath.Dir(tree)) }, []string{"extensions", "sandbox", "hello"},
		"is a link, not the folder gemkit installed the tree in", "is not a folder of its own (a symlink?); remove it and try again"},
}

// swapForLink replaces the folder dir with a link to a copy of it
// beside it.
func swapForLink(t *testing.T, dir string) {
	t.Helper()
	copied := dir + "-copy"
	if out, err := exec.Command("cp", "-a", dir, copied).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(copied, dir); err != nil {
		t.Fatal(err)
	}
}

func (tc changedTree) run(t *testing.T, unprivileged bool) {
	e := newPkgEnv(t, helloManifest)
	if unprivileged {
		e.unprivileged(t)
	}
	publishHello(e.reg, "1.0.0", "1.0.0")
	e.must("extensions", "sandbox", "hello")
	c, _ := e.choice()
	old := c.Packages["hello"].Tree
	tc.change(t, old)
	out, _ := e.run("extensions", "doctor")
	if !strings.Contains(out, "the package pinned for its MCP server hello (hello-mcp 1.0.0) is not as you agreed to it: ") || !strings.Contains(out, tc.want) ||
		!strings.Contains(out, "so gemkit mcp does not start it") || !strings.Contains(out, "`gemkit extensions sandbox hello` installs it again from the registry") {
		t.Errorf("doctor does not tell of the changed tree:\n%s", out)
	}
	if out, _ := e.run("extensions", "list"); !strings.Contains(out, "NOT SERVED") || !strings.Contains(out, tc.want) {
		t.Errorf("list does not tell of the changed tree:\n%s", out)
	}
	out, _ = e.run(tc.args...)
	if strings.Contains(out, "pinned as before") || !strings.Contains(out, tc.after) {
		t.Errorf("%v agreed to the changed tree again:\n%s", tc.args, out)
	}
	if tc.after != againWords {
		return
	}
	c, granted := e.choice()
	if p := c.Packages["hello"]; p.Tree == old || !granted || !treeThere(p.Tree) {
		t.Errorf("after %v: %+v, consent %v", tc.args, p, granted)
	}
	if out, _ := e.run("extensions", "doctor"); strings.Contains(out, "not as you agreed") {
		t.Errorf("doctor still tells of a changed tree:\n%s", out)
	}
}

// unprivileged has every later command of e run as uid 65534: e's
// home becomes that user's, and gemkit's binary is copied where that
// user can run it.
func (e *pkgEnv) unprivileged(t *testing.T) {
	t.Helper()
	setpriv := gemkittest.Tool(t, "setpriv", "util-linux")
	os.Chmod(filepath.Dir(e.home), 0o755)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	b, err := os.ReadFile(e.bin)
	if err != nil {
		t.Fatal(err)
	}
	e.bin = filepath.Join(dir, "gemkit")
	if err := os.WriteFile(e.bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(e.home, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	})
	if err != nil {
		t.Fatal(err)
	}
	e.user = []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"}
}

// treeThere reports whether a pinned tree is still where it was put.
func treeThere(dir string) bool {
	fi, err := os.Lstat(dir)
	return err == nil && fi.IsDir()
}
