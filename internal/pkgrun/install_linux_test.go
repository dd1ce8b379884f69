package pkgrun

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/npmregistrytest"
	"github.com/gemkit/gemkit/internal/runnerline"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	os.Exit(m.Run())
}

// serverJS is a package's program: it prints its package's version, so
// that a test sees which bytes run.
const serverJS = "#!/usr/bin/env node\nconsole.log('hello-mcp ' + require('./package.json').version + ' dep ' + require('dep-a').v);\n"

// publishHello serves hello-mcp at ver, which depends on dep-a ^1.0.0,
// and dep-a at depVer.
func publishHello(r *npmregistrytest.Registry, ver, depVer string) {
	r.Publish(map[string]string{
		"package.json": `{"name": "dep-a", "version": "` + depVer + `", "main": "index.js"}`,
		"index.js":     "exports.v = '" + depVer + "';\n",
	})
	r.Publish(map[string]string{
		"package.json": `{"name": "hello-mcp", "version": "` + ver + `", "bin": {"hello-mcp": "server.js"}, "dependencies": {"dep-a": "^1.0.0"}}`,
		"server.js":    serverJS,
	})
}

// testInstaller is an Installer for a home of the test's own, whose npm
// configuration names the registry r (and fails at once on an error,
// rather than after npm's retries).
func testInstaller(t *testing.T, r *npmregistrytest.Registry, npmrc string) (*Installer, string) {
	t.Helper()
	home := t.TempDir()
	os.Chmod(home, 0o755)
	if npmrc == "" {
		npmrc = "registry=" + r.URL + "\nfetch-retries=0\n"
	}
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(npmrc), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TEST_NPM_TOKEN=token-7731"}
	return &Installer{Launcher: &sandbox.Launcher{}, Environ: env, Root: Root(home)}, home
}

func hello(t *testing.T) runnerline.Invocation {
	t.Helper()
	in, ok, err := runnerline.Parse("npx", []string{"-y", "hello-mcp", "--stdio"})
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	return in
}

func needNPM(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs npm in gemkit's sandbox against a loopback registry: runs without -short, as in CI")
	}
	if _, _, _, err := findNPM(envmap.Of(os.Environ()), nil); err != nil {
		t.Fatal(err)
	}
}

// TestInstallPinsNewest: a bare name installs the registry's latest, at
// its exact version, with its dependencies, from the registry of the
// person's configuration, whose token reaches the registry and nothing
// else: the tree holds no configuration. A new version published after
// is installed only by a new Install, and Diff says what changed.
func TestInstallPinsNewest(t *testing.T) {
	needNPM(t)
	r := npmregistrytest.New(t, nil)
	publishHello(r, "1.0.0", "1.0.0")
	publishHello(r, "1.0.0", "1.1.0")
	npmrc := "registry=" + r.URL + "\nfetch-retries=0\n//" + r.Host + "/:_authToken=${TEST_NPM_TOKEN}\nscript-shell=/bin/false\n"
	in, _ := testInstaller(t, r, npmrc)
	var progress bytes.Buffer
	in.Progress = &progress
	tr, err := in.Install(context.Background(), Request{Extension: "hello", Server: "hello", Invocation: hello(t)})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if tr.Version != "1.0.0" || !tr.Newest || tr.Package != "hello-mcp" || tr.Program != "node_modules/hello-mcp/server.js" || tr.Packages != 2 || !strings.HasPrefix(tr.Integrity, "sha512-") {
		t.Errorf("tree: %+v", tr)
	}
	if !strings.Contains(progress.String(), "Installing hello-mcp (the newest) for hello from "+r.URL) || !strings.Contains(progress.String(), "installed hello-mcp 1.0.0: 2 packages") {
		t.Errorf("progress:\n%s", progress.String())
	}
	if got := r.Authorizations(); len(got) == 0 || got[0] != "Bearer token-7731" {
		t.Errorf("the registry got the authorizations %q, want the person's token", got)
	}
	leaks := 0
	filepath.WalkDir(tr.Dir, func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("token-7731")) {
			t.Errorf("%s holds the person's token", p)
			leaks++
		}
		return nil
	})
	out, err := runProgram(filepath.Join(tr.Dir, tr.Program))
	if err != nil || out != "hello-mcp 1.0.0 dep 1.1.0" {
		t.Errorf("the pinned program says %q (%v)", out, err)
	}
	entries, _ := os.ReadDir(filepath.Join(in.Root, "hello"))
	if len(entries) != 2 || entries[0].Name() != cacheName {
		t.Errorf("the extension's folder holds %d entries, want its npm cache and the tree", len(entries))
	}

	publishHello(r, "1.2.0", "1.2.0")
	tr2, err := in.Install(context.Background(), Request{Extension: "hello", Server: "hello", Invocation: hello(t)})
	if err != nil {
		t.Fatal(err)
	}
	if tr2.Version != "1.2.0" || tr2.Dir == tr.Dir || tr2.Lock == tr.Lock {
		t.Errorf("after a new version: %+v", tr2)
	}
	c, err := Diff(tr.Dir, tr2.Dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Changes{Changed: []string{"dep-a 1.1.0 → 1.2.0", "hello-mcp 1.0.0 → 1.2.0"}}
	if !slices.Equal(c.Changed, want.Changed) || len(c.Added)+len(c.Removed) != 0 {
		t.Errorf("Diff = %+v", c)
	}
	if err := Prune(in.Root, "hello", []string{tr2.Dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tr.Dir); err == nil {
		t.Error("Prune kept the tree no record pins")
	}
	if _, err := os.Stat(tr2.Dir); err != nil {
		t.Errorf("Prune removed the tree to keep: %v", err)
	}
}

// runProgram runs a pinned program outside any sandbox, as the test's
// own check of what it is.
func runProgram(p string) (string, error) {
	cmd := execCommand(p)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// TestInstallExactVersion: a version the line names is the one
// installed, not the newest.
func TestInstallExactVersion(t *testing.T) {
	needNPM(t)
	r := npmregistrytest.New(t, nil)
	publishHello(r, "1.0.0", "1.0.0")
	publishHello(r, "2.0.0", "1.0.0")
	in, _ := testInstaller(t, r, "")
	inv := hello(t)
	inv.Spec = "1.0.0"
	tr, err := in.Install(context.Background(), Request{Extension: "hello", Server: "s", Invocation: inv})
	if err != nil || tr.Version != "1.0.0" || tr.Newest {
		t.Fatalf("%+v %v", tr, err)
	}
}

// TestInstallScripts: a package's install script does not run, and the
// tree says which package has one; allowed, it runs in the install's
// sandbox.
func TestInstallScripts(t *testing.T) {
	needNPM(t)
	r := npmregistrytest.New(t, nil)
	r.Publish(map[string]string{
		"package.json": `{"name": "scripted-mcp", "version": "1.0.0", "bin": "server.js", "scripts": {"postinstall": "node -e \"require('fs').writeFileSync('ran.txt', 'ran')\""}}`,
		"server.js":    "#!/usr/bin/env node\n",
	})
	in, _ := testInstaller(t, r, "")
	inv, _, _ := runnerline.Parse("npx", []string{"-y", "scripted-mcp"})
	tr, err := in.Install(context.Background(), Request{Extension: "s", Server: "s", Invocation: inv})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.ScriptsNotRun, []string{"scripted-mcp@1.0.0"}) || tr.ScriptsRun {
		t.Errorf("ScriptsNotRun %q, ScriptsRun %v", tr.ScriptsNotRun, tr.ScriptsRun)
	}
	if _, err := os.Stat(filepath.Join(tr.Dir, "node_modules", "scripted-mcp", "ran.txt")); err == nil {
		t.Error("the install script ran")
	}
	tr, err = in.Install(context.Background(), Request{Extension: "s", Server: "s", Invocation: inv, Scripts: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.ScriptsNotRun) != 0 || !tr.ScriptsRun {
		t.Errorf("allowed: ScriptsNotRun %q, ScriptsRun %v", tr.ScriptsNotRun, tr.ScriptsRun)
	}
	if b, err := os.ReadFile(filepath.Join(tr.Dir, "node_modules", "scripted-mcp", "ran.txt")); err != nil || string(b) != "ran" {
		t.Errorf("the allowed install script did not run: %q %v", b, err)
	}
}

// TestInstallInterrupted: an install cancelled while npm fetches a
// tarball stops at once and leaves nothing: no tree, no staging folder,
// no configuration with the person's tokens.
func TestInstallInterrupted(t *testing.T) {
	needNPM(t)
	r := npmregistrytest.New(t, nil)
	publishHello(r, "1.0.0", "1.0.0")
	reached, release := r.Hold("hello-mcp")
	defer release()
	in, _ := testInstaller(t, r, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-reached
		cancel()
	}()
	_, err := in.Install(ctx, Request{Extension: "hello", Server: "hello", Invocation: hello(t)})
	var ie *InterruptedError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want an InterruptedError", err)
	}
	wantNothingKept(t, in, "hello")
}

// TestInstallBadRegistry: each way a registry fails is said in words
// naming the registry and what went wrong, and leaves nothing.
func TestInstallBadRegistry(t *testing.T) {
	needNPM(t)
	for _, tc := range []struct {
		name string
		how  npmregistrytest.Breakage
		want string
	}{
		{"missing", npmregistrytest.NotFound, "has no such package (404): hello-mcp"},
		{"not JSON", npmregistrytest.NotJSON, "answered something that is not an npm package's metadata"},
		{"server error", npmregistrytest.ServerError, "failed (HTTP 500)"},
		{"wrong bytes", npmregistrytest.WrongBytes, "did not match the integrity (SHA-512)"},
		{"tarball elsewhere", npmregistrytest.ElsewhereTarball, "gemkit's sandbox refused the install a connection to what is not the registry of your npm configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := npmregistrytest.New(t, nil)
			publishHello(r, "1.0.0", "1.0.0")
			r.Break("hello-mcp", tc.how)
			in, _ := testInstaller(t, r, "")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, err := in.Install(ctx, Request{Extension: "hello", Server: "hello", Invocation: hello(t)})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was kept") {
				t.Errorf("err = %v\nwant it to say %q", err, tc.want)
			}
			wantNothingKept(t, in, "hello")
		})
	}
}

// TestInstallUnprivileged runs the install tests as uid 65534.
func TestInstallUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "TestInstallPinsNewest|TestInstallInterrupted|TestInstallScripts|TestInstallTrustsPersonsCA|TestInstallThroughPersonsProxy|TestInstallPicksForRuntime|TestScriptsCannotPoisonOtherExtensions|TestScriptsNeverSeeToken|TestLinksOutOfTreeRefused|TestInstallBoundWhileWriting")
}

func execCommand(p string) *exec.Cmd { return exec.Command(p) }
