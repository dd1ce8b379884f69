package extmcp_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

var (
	widenOnce sync.Once
	widenDir  string
	widenErr  error
)

// widenExtension is a folder (world-readable, for the run as uid 65534)
// holding testdata's widen.mjs and, in its node_modules, Google's auth
// library from interop's node_modules with every package it needs:
// /tmp/gemkit-extmcp-widen-<pid>, made by the test process; the run as
// uid 65534 takes its parent's.
func widenExtension(t testing.TB) string {
	t.Helper()
	widenOnce.Do(func() {
		if parent := fmt.Sprintf("/tmp/gemkit-extmcp-widen-%d", os.Getppid()); os.Getuid() != 0 {
			if _, err := os.Stat(filepath.Join(parent, "widen.mjs")); err == nil {
				widenDir = parent
				return
			}
		}
		root := filepath.Join(gemkittest.RepoRoot(t), "interop", "node_modules")
		if real, err := filepath.EvalSymlinks(root); err == nil {
			root = real
		}
		pkgs, err := npmClosure(root, "google-auth-library")
		if err != nil {
			widenErr = err
			return
		}
		dir := fmt.Sprintf("/tmp/gemkit-extmcp-widen-%d", os.Getpid())
		if widenErr = os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); widenErr != nil {
			return
		}
		os.Chmod(dir, 0o755)
		widenDir = dir
		for _, p := range pkgs {
			to := filepath.Join(dir, "node_modules", p)
			os.MkdirAll(filepath.Dir(to), 0o755)
			if out, err := exec.Command("cp", "-a", filepath.Join(root, p), to).CombinedOutput(); err != nil {
				widenErr = fmt.Errorf("%v: %s", err, out)
				return
			}
		}
		script, _ := os.ReadFile(filepath.Join("testdata", "widen.mjs"))
		widenErr = os.WriteFile(filepath.Join(dir, "widen.mjs"), script, 0o644)
	})
	if widenErr != nil {
		t.Fatalf("interop/node_modules/google-auth-library is needed: run `npm ci` in interop (%v)", widenErr)
	}
	return widenDir
}

// npmClosure are the packages of root (a node_modules folder) that the
// package pkg needs, found as Node finds them (a package's own
// node_modules first, then its parents'), named as the folders of root
// to copy, pkg's included; a package nested in one of them comes along.
func npmClosure(root, pkg string) ([]string, error) {
	var top []string
	seen := map[string]bool{}
	var visit func(dir string) error
	visit = func(dir string) error {
		if seen[dir] {
			return nil
		}
		seen[dir] = true
		if rel, err := filepath.Rel(root, dir); err == nil && !strings.Contains(rel, "node_modules") {
			top = append(top, rel)
		}
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err != nil {
			return err
		}
		var pj struct {
			Dependencies map[string]string `json:"dependencies"`
		}
		if err := json.Unmarshal(b, &pj); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		for dep := range pj.Dependencies {
			found := ""
			for d := dir; strings.HasPrefix(d, root); d = filepath.Dir(d) {
				if c := filepath.Join(d, "node_modules", dep); isDir(c) {
					found = c
					break
				}
				if c := filepath.Join(root, dep); d == root && isDir(c) {
					found = c
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, which is not installed", dir, dep)
			}
			if err := visit(found); err != nil {
				return err
			}
		}
		return nil
	}
	err := visit(filepath.Join(root, pkg))
	return top, err
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// widenSetup is a manager of the widen.mjs server in a fresh workspace
// and home, whose person's environment is environ besides PATH and HOME.
func widenSetup(t *testing.T, environ ...string) *setup {
	t.Helper()
	s := &setup{ext: widenExtension(t), ws: t.TempDir(), home: t.TempDir(), log: &gemkittest.Output{}}
	os.Chmod(s.home, 0o755)
	widenManager(t, s, environ...)
	return s
}

// widenManager gives s a manager of its own (s.m) for its workspace and
// home, whose person's environment is environ besides PATH and HOME.
func widenManager(t *testing.T, s *setup, environ ...string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node (>= 20) is needed")
	}
	l := &sandbox.Launcher{}
	t.Cleanup(func() { l.Close() })
	s.m = extmcp.NewManager(extmcp.Config{
		Launcher: l, Workspace: s.ws, Timeout: 30 * time.Second, Idle: time.Minute,
		Environ: append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home}, environ...),
		Logger:  slog.New(slog.NewTextHandler(s.log, nil)),
	})
	t.Cleanup(s.m.Close)
}

func (s *setup) widenSpec(ext string) extmcp.Spec {
	// Node 20's fetch (which Google's auth library uses) runs as
	// published: no NODE_OPTIONS, with or without a memory cgroup.
	return extmcp.Spec{Extension: ext, Server: "srv", Dir: s.ext, Command: "node", Args: []string{filepath.Join(s.ext, "widen.mjs")}}
}

// TestCredentialsByKind: a Google Cloud-style server (Google's own auth
// library) with the person logged in (gcloud auth application-default
// login's file in their home): by default it finds no credentials, and
// the refusal of what it tried instead (the metadata service) says it
// is looking for credentials and gives the command that hands them,
// never a metadata address to allow; handed gcloud credentials by
// name, it finds them, and only that file: gcloud's own tokens beside
// it stay closed, the file is read-only, and nothing is left in its
// data folder after. $GOOGLE_APPLICATION_CREDENTIALS, when set in gemkit
// mcp's environment to another file, hands nothing: the server is not
// started, and the words say why (TestCredentialsHandedAsAgreed has
// every such attack).
func TestCredentialsByKind(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Google's auth library under node in the sandbox: runs without -short, as in CI")
	}
	s := widenSetup(t)
	gcloud := filepath.Join(s.home, ".config", "gcloud")
	os.MkdirAll(gcloud, 0o700)
	adc := `{"type": "authorized_user", "client_id": "widen-test.apps.googleusercontent.com", "client_secret": "s3cret", "refresh_token": "r3fresh"}`
	os.WriteFile(filepath.Join(gcloud, "application_default_credentials.json"), []byte(adc), 0o600)
	os.WriteFile(filepath.Join(gcloud, "credentials.db"), []byte("gcloud's own tokens"), 0o600)
	sp := s.widenSpec("cloudrun")
	s.m.Sync([]extmcp.Spec{sp})

	text, isErr, err := call(t, s.m, sp, "credentials", map[string]any{})
	if err != nil || !isErr || !strings.Contains(text, "Could not load the default credentials") {
		t.Fatalf("credentials by default: %q %v %v", text, isErr, err)
	}
	allow := "gemkit extensions sandbox cloudrun --allow-credentials gcloud"
	if !strings.Contains(text, "it is looking for credentials") || !strings.Contains(text, allow) {
		t.Errorf("the model is not told the server looks for credentials, with %q:\n%s", allow, text)
	}
	log := s.log.String()
	if !strings.Contains(log, "extension cloudrun's MCP server srv is looking for credentials") || !strings.Contains(log, allow) {
		t.Errorf("the person is not told the server looks for credentials, with %q:\n%s", allow, log)
	}
	for _, words := range []string{text, log} {
		for _, never := range []string{"--allow-host 169.254.169.254", "--allow-host metadata", "allow-host '[fd00"} {
			if strings.Contains(words, never) {
				t.Errorf("a metadata address is suggested (%s):\n%s", never, words)
			}
		}
	}
	t.Logf("refused: %s", text)

	sp.Widening = extension.Widening{Credentials: []string{"gcloud"}}
	// The file the switch found and the person agreed to.
	if sp.Handed, err = permission.HandCredentials("gcloud", s.home, nil); err != nil {
		t.Fatal(err)
	}
	s.m.Sync([]extmcp.Spec{sp})
	// The library may still ask the metadata service for what the file
	// does not hold (a project: it runs gcloud, where installed, which
	// does): told after the answer, as handed and asked all the same.
	if text, isErr, err := call(t, s.m, sp, "credentials", map[string]any{}); err != nil || isErr || strings.Split(text, "\n")[0] != "UserRefreshClient widen-test.apps.googleusercontent.com" ||
		strings.Contains(text, "--allow-credentials") {
		t.Fatalf("credentials handed: %q %v %v\n%s", text, isErr, err, s.log.String())
	}
	data := filepath.Join(s.home, ".local", "share", "gemkit", "extension-data", "cloudrun")
	theirs := filepath.Join(data, ".config", "gcloud")
	// Of the person's gcloud folder, the one file (gcloud, where
	// installed, writes its own files beside it for the run).
	if text, isErr, err := call(t, s.m, sp, "list", map[string]any{"path": theirs}); err != nil || isErr || !strings.Contains(","+text+",", ",application_default_credentials.json,") ||
		strings.Contains(text, "credentials.db") {
		t.Errorf("its HOME's gcloud folder holds %q %v %v, want the one file of yours", text, isErr, err)
	}
	for _, c := range []struct{ tool, path string }{
		{"read", filepath.Join(gcloud, "credentials.db")},
		{"read", filepath.Join(gcloud, "application_default_credentials.json")},
		{"write", filepath.Join(theirs, "application_default_credentials.json")},
	} {
		if text, isErr, err := call(t, s.m, sp, c.tool, map[string]any{"path": c.path}); err != nil || !isErr || strings.Contains(text, "tokens") {
			t.Errorf("%s %s: %q %v %v, want a refusal", c.tool, c.path, text, isErr, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(gcloud, "application_default_credentials.json")); string(b) != adc {
		t.Errorf("the person's file changed: %s", b)
	}
	s.m.Close()
	waitFor(t, func() bool { return len(running(t, s.ext)) == 0 })
	if entries, err := os.ReadDir(theirs); err != nil || len(entries) != 0 {
		t.Errorf("left in the data folder's gcloud folder: %v %v", entries, err)
	}

	// $GOOGLE_APPLICATION_CREDENTIALS naming another file in gemkit
	// mcp's environment: not followed, and the server not started.
	sa := filepath.Join(s.home, "elsewhere.json")
	os.WriteFile(sa, []byte(strings.Replace(adc, "widen-test", "named-by-variable", 1)), 0o600)
	s2 := widenSetup(t, "GOOGLE_APPLICATION_CREDENTIALS="+sa)
	sp2 := s2.widenSpec("cloudrun")
	sp2.Widening, sp2.Handed = extension.Widening{Credentials: []string{"gcloud"}}, sp.Handed
	s2.m.Sync([]extmcp.Spec{sp2})
	if text, isErr, err := call(t, s2.m, sp2, "credentials", map[string]any{}); err == nil || strings.Contains(text, "named-by-variable") ||
		!strings.Contains(err.Error(), "$GOOGLE_APPLICATION_CREDENTIALS is set to") {
		t.Errorf("credentials named by the variable: %q %v %v\n%s", text, isErr, err, s2.log.String())
	}
}

// TestVariablesByName: a variable of the person's that the manifest's
// env names ("TFE_TOKEN": "$TFE_TOKEN", as terraform's) arrives empty
// until it is passed by name; passed, it arrives, as does one the
// manifest does not name; no other variable of the person's does.
func TestVariablesByName(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s := widenSetup(t, "TFE_TOKEN=tok-1234", "TFE_ADDRESS=https://tfe.example.com", "SECRET_TOKEN=do-not-pass")
	sp := s.widenSpec("terraform")
	sp.Env = map[string]string{"TFE_TOKEN": "$TFE_TOKEN"}
	s.m.Sync([]extmcp.Spec{sp})
	env := func(sp extmcp.Spec, name string) string {
		t.Helper()
		text, isErr, err := call(t, s.m, sp, "env", map[string]any{"name": name})
		if err != nil || isErr {
			t.Fatalf("env %s: %q %v %v", name, text, isErr, err)
		}
		return text
	}
	if got := env(sp, "TFE_TOKEN"); got != `{"TFE_TOKEN":""}` {
		t.Errorf("TFE_TOKEN not passed: %s", got)
	}
	sp.Widening = extension.Widening{Env: []string{"TFE_ADDRESS", "TFE_TOKEN", "UNSET_HERE"}}
	s.m.Sync([]extmcp.Spec{sp})
	for name, want := range map[string]string{"TFE_TOKEN": `"tok-1234"`, "TFE_ADDRESS": `"https://tfe.example.com"`, "SECRET_TOKEN": "null", "UNSET_HERE": "null"} {
		if got := env(sp, name); got != `{"`+name+`":`+want+`}` {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if want := "is passed UNSET_HERE by name, which this gemkit mcp's environment does not have: set it"; !strings.Contains(s.log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, s.log.String())
	}
	// A tour's finding: Gemini CLI's rule of names was given for every
	// unset name, this one too, which it does not redact.
	if strings.Contains(s.log.String(), "UNSET_HERE by name, which this gemkit mcp's environment does not have (a client") {
		t.Errorf("the log blames Gemini CLI's redaction for a name it does not redact:\n%s", s.log.String())
	}
}

// TestManifestPermissionsReachServers: what a manifest's permissions
// declare, its servers get in gemkit's sandbox: a loopback host
// (localhost:PORT) through the proxy, and the workspace to write (its
// protected paths excepted); another host stays refused.
func TestManifestPermissionsReachServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s := widenSetup(t)
	declared, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer declared.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, ln := range []net.Listener{declared, other} {
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("reached")) }))
	}
	port := declared.Addr().(*net.TCPAddr).Port
	dir := filepath.Join(t.TempDir(), "authored")
	os.MkdirAll(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	script, _ := os.ReadFile(filepath.Join(s.ext, "widen.mjs"))
	os.WriteFile(filepath.Join(dir, "widen.mjs"), script, 0o644)
	os.WriteFile(filepath.Join(dir, "gemini-extension.json"), []byte(fmt.Sprintf(`{"name": "authored", "version": "1.0.0",
 "permissions": {"filesystem": {"read": "workspace", "write": "workspace"}, "network": {"allowedHosts": ["localhost:%d"]}},
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/widen.mjs"]}}}`, port)), 0o644)
	set, err := disclosure.LoadDir(dir, s.ws)
	if err != nil {
		t.Fatal(err)
	}
	specs, skipped := extmcp.Specs(set, nil)
	if len(specs) != 1 || len(skipped) > 0 {
		t.Fatalf("specs %+v, skipped %+v", specs, skipped)
	}
	sp := specs[0]
	s.m.Sync(specs)
	os.MkdirAll(filepath.Join(s.ws, ".git"), 0o755)

	if text, isErr, err := call(t, s.m, sp, "proxied", map[string]any{"url": fmt.Sprintf("http://localhost:%d/", port)}); err != nil || isErr || text != "reached" {
		t.Errorf("the declared loopback host: %q %v %v\n%s", text, isErr, err, s.log.String())
	}
	if text, isErr, err := call(t, s.m, sp, "write", map[string]any{"path": filepath.Join(s.ws, "made.txt")}); err != nil || isErr {
		t.Errorf("writing the workspace: %q %v %v", text, isErr, err)
	}
	if _, err := os.Stat(filepath.Join(s.ws, "made.txt")); err != nil {
		t.Errorf("the workspace was not written: %v", err)
	}
	for _, c := range []struct{ tool, arg, val string }{
		{"proxied", "url", "http://" + other.Addr().String() + "/"},
		{"write", "path", filepath.Join(s.ws, ".git", "config")},
	} {
		if text, isErr, err := call(t, s.m, sp, c.tool, map[string]any{c.arg: c.val}); err != nil || !isErr || strings.Contains(text, "reached") {
			t.Errorf("%s %s: %q %v %v, want a refusal", c.tool, c.val, text, isErr, err)
		}
	}
}

// TestListenTold: a server that listens on loopback (an OAuth sign-in's
// callback, as dynatrace's on 127.0.0.1:5345) is refused and told so in
// gemkit's words, to the model and the person, with why no widening
// helps and no host to allow.
func TestListenTold(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s := widenSetup(t)
	sp := s.widenSpec("dynatrace")
	s.m.Sync([]extmcp.Spec{sp})
	text, isErr, err := call(t, s.m, sp, "listen", map[string]any{"port": 5345})
	if err != nil || !isErr || !strings.Contains(text, "EACCES") {
		t.Fatalf("listen: %q %v %v, want a refusal", text, isErr, err)
	}
	if !strings.Contains(text, "gemkit's sandbox refused this MCP server during the call: listening on 127.0.0.1:5345: no widening helps") || strings.Contains(text, "--allow-host") {
		t.Errorf("the model is not told in gemkit's words:\n%s", text)
	}
	if want := "extension dynatrace's MCP server srv was refused listening on 127.0.0.1:5345 ("; !strings.Contains(s.log.String(), want) || !strings.Contains(s.log.String(), "your browser's sign-in callback") {
		t.Errorf("the log does not say %q:\n%s", want, s.log.String())
	}
}

// TestOneHostOneRoundReal: Node 20's fetch of localhost:PORT looks the name
// up itself and connects to 127.0.0.1:PORT, where a client through the
// proxy asks for localhost:PORT: one refusal, whose one command allows
// the host both ways, so that the next call reaches it through the
// proxy by either name.
func TestOneHostOneRoundReal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s := widenSetup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("reached")) }))
	port := ln.Addr().(*net.TCPAddr).Port
	sp := s.widenSpec("devserver")
	s.m.Sync([]extmcp.Spec{sp})
	text, isErr, err := call(t, s.m, sp, "fetch", map[string]any{"url": fmt.Sprintf("http://localhost:%d/", port)})
	allow := fmt.Sprintf("gemkit extensions sandbox devserver --allow-host 127.0.0.1:%d --allow-host localhost:%d", port, port)
	if err != nil || !isErr || !strings.Contains(text, allow) {
		t.Fatalf("fetch: %q %v %v; want the one command %q", text, isErr, err, allow)
	}
	sp.Widening = extension.Widening{Hosts: strings.Fields(strings.ReplaceAll(strings.TrimPrefix(allow, "gemkit extensions sandbox devserver "), "--allow-host", ""))}
	s.m.Sync([]extmcp.Spec{sp})
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if text, isErr, err := call(t, s.m, sp, "proxied", map[string]any{"url": fmt.Sprintf("http://%s:%d/", host, port)}); err != nil || isErr || text != "reached" {
			t.Errorf("through the proxy to %s after the one command: %q %v %v", host, text, isErr, err)
		}
	}
}

// TestWidenUnprivileged runs the tests above as uid 65534.
func TestWidenUnprivileged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tests above again as uid 65534: runs without -short, as in CI")
	}
	if os.Getuid() == 0 {
		widenExtension(t)
	}
	sandboxtest.RerunUnprivileged(t, "^Test(CredentialsByKind|CredentialsHandedAsAgreed|VariablesByName|ManifestPermissionsReachServers|ListenTold|OneHostOneRoundReal)$")
}

// TestNamedHostLogged: a host a call's arguments name is likely needed,
// though servers also reach for it on their own (a package registry's
// update check): gemkit mcp's log says it as the call's result does,
// with the command that allows it, never as background; through Call
// and through Forward.
func TestNamedHostLogged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s := widenSetup(t)
	sp := s.widenSpec("fetcher")
	s.m.Sync([]extmcp.Spec{sp})
	for _, c := range []struct {
		host    string
		forward bool
	}{{"registry.npmjs.org", false}, {"pypi.org", true}} {
		args := map[string]any{"url": "http://" + c.host + "/express"}
		var text string
		if c.forward {
			res, err, ok := forwardCall(t, s.m, sp, "proxied", args)
			if !ok || err != nil {
				t.Fatalf("forward: %v %v", ok, err)
			}
			text = res
		} else {
			var err error
			if text, _, err = call(t, s.m, sp, "proxied", args); err != nil {
				t.Fatal(err)
			}
		}
		allow := "gemkit extensions sandbox fetcher --allow-host " + c.host + ":80"
		if !strings.Contains(text, "(named in the call's arguments)") || !strings.Contains(text, allow) {
			t.Fatalf("%s: the result says %q; want it named in the arguments, with %q", c.host, text, allow)
		}
		var logged string
		for _, line := range strings.Split(s.log.String(), "\n") {
			if strings.Contains(line, "refused a connection to "+c.host) {
				logged = line
			}
		}
		if !strings.Contains(logged, "(named in the call's arguments)") || !strings.Contains(logged, "to allow it: "+allow) || strings.Contains(logged, "background") {
			t.Errorf("%s: the log says %q; want it named in the arguments, with %q, as the result says", c.host, logged, allow)
		}
	}
}
