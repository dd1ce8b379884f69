package acp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
)

// TestTerminalAuth signs in the way an ACP client does with gemkit's
// Terminal Auth method: a client that declares auth.terminal is offered
// the method, with args ["login"]; the client runs its launch of gemkit
// acp with those args appended (the ACP v1 schema's AuthMethodTerminal),
// and the person pastes the key; the key is stored 0600 in a folder
// 0700, and a session started without GEMINI_API_KEY sends it to the
// model. ACP's logout removes it. The ACP registry's AUTHENTICATION.md
// has the args replace the launch's instead: `gemkit login` and `gemkit
// logout` do the same.
func TestTerminalAuth(t *testing.T) {
	f := newFixture(t, fakemodel.Text("Signed in."))
	f.noKey = true
	keyFile := filepath.Join(f.root, "config", "gemkit", "gemini-api-key")
	login := func(args ...string) string {
		t.Helper()
		c := exec.Command(f.bin, args...)
		c.Env, c.Dir = f.env(), f.ws
		c.Stdin = strings.NewReader("AIzaTerminalAuthKey-1\n")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("gemkit %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	p := f.sessionsPlan([]step{{Op: "new"}})
	p.ClientCapabilities = map[string]any{"auth": map[string]any{"terminal": true}}
	r := driveSessions(t, p)
	var method []string
	for _, m := range r.Runs[0].Init.AuthMethods {
		if m.Type == "terminal" {
			method = m.Args
		}
	}
	if !slices.Equal(method, []string{"login"}) {
		t.Fatalf("auth methods %+v, want a terminal one with args [login]", r.Runs[0].Init.AuthMethods)
	}
	if e := r.Runs[0].Steps[0].Error; e == nil || e.Code != -32000 || !strings.Contains(e.Message, "gemkit login") {
		t.Errorf("session/new with no key: %+v", e)
	}

	// The client's launch (gemkit acp) with the method's args appended.
	out := login(append(p.Args, method...)...)
	if !strings.Contains(out, keyFile) {
		t.Errorf("login says %q", out)
	}
	for path, want := range map[string]os.FileMode{keyFile: 0o600, filepath.Dir(keyFile): 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v %v, want %04o", path, fi.Mode(), err, want)
		}
	}

	r = driveSessions(t, f.sessionsPlan([]step{{Op: "new"}, {Op: "prompt", Text: "hello"}, {Op: "logout"}}))
	steps := r.Runs[0].Steps
	if steps[0].Error != nil || steps[1].Error != nil || steps[2].Error != nil {
		t.Fatalf("with the stored key: new %+v, prompt %+v, logout %+v", steps[0].Error, steps[1].Error, steps[2].Error)
	}
	turns := f.model.Turns()
	if len(turns) != 1 || turns[0].Header.Get("x-goog-api-key") != "AIzaTerminalAuthKey-1" {
		t.Errorf("the model was not sent the stored key")
	}
	if !strings.Contains(string(r.Runs[0].Init.AgentCapabilities), `"logout":{}`) {
		t.Errorf("logout not declared: %s", r.Runs[0].Init.AgentCapabilities)
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Errorf("after ACP's logout the key file: %v", err)
	}

	// The registry's reading: the args replace the launch's.
	login("login")
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("gemkit login: %v %v", fi, err)
	}
	c := exec.Command(f.bin, "logout")
	c.Env = f.env()
	if out, err := c.CombinedOutput(); err != nil || !strings.Contains(string(out), "Removed the stored key") {
		t.Errorf("gemkit logout: %v %s", err, out)
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Errorf("after gemkit logout the key file: %v", err)
	}
}

// TestTerminalAuthRegistryClient: the ACP registry's auth check
// (.github/workflows/client.py of agentclientprotocol/registry,
// run_auth_check) declares terminal auth in clientCapabilities._meta
// ("terminal-auth": true) and passes an agent that offers a method of
// type "agent" or "terminal". gemkit offers its terminal method to it.
func TestTerminalAuthRegistryClient(t *testing.T) {
	f := newFixture(t)
	p := f.sessionsPlan([]step{})
	p.ClientCapabilities = map[string]any{"terminal": true, "fs": map[string]any{"readTextFile": true, "writeTextFile": true},
		"_meta": map[string]any{"terminal_output": true, "terminal-auth": true}}
	r := driveSessions(t, p)
	var types []string
	for _, m := range r.Runs[0].Init.AuthMethods {
		types = append(types, m.ID+":"+m.Type)
	}
	if !slices.Contains(types, "gemkit-login:terminal") {
		t.Errorf("auth methods %v", types)
	}
}

// TestLoginRefusesBadKey: a key pasted with a space, or none at all, is
// refused in words and nothing is stored.
func TestLoginRefusesBadKey(t *testing.T) {
	f := newFixture(t)
	keyFile := filepath.Join(f.root, "config", "gemkit", "gemini-api-key")
	for in, want := range map[string]string{"AIza two\n": "holds a space", "\n": "no key given"} {
		c := exec.Command(f.bin, "login")
		c.Env, c.Stdin = f.env(), strings.NewReader(in)
		out, err := c.CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("login with %q: %v\n%s", in, err, out)
		}
		if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
			t.Errorf("login with %q stored a key: %v", in, err)
		}
	}
}
