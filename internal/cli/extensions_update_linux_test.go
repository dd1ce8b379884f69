package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// stdout runs gemkit and returns its stdout alone (--json's), failing
// the test when it fails.
func (e *pkgEnv) stdout(args ...string) string {
	e.t.Helper()
	var errOut strings.Builder
	cmd := e.cmd(args...)
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("gemkit %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut.String())
	}
	return string(out)
}

// helloAt is helloManifest at version v, its server asking npx for
// hello-mcp at that same version.
func helloAt(v string) string {
	return `{"name": "hello", "version": "` + v + `", "description": "A server started by npx.",
 "mcpServers": {"hello": {"command": "npx", "args": ["-y", "hello-mcp@` + v + `", "--stdio"]}}}`
}

// answer runs gemkit with a terminal as its input, on which the person
// typed answers before it asked anything.
func (e *pkgEnv) answer(answers string, args ...string) (string, error) {
	e.t.Helper()
	master, slave := openPTY(e.t)
	if _, err := master.Write([]byte(answers)); err != nil {
		e.t.Fatal(err)
	}
	cmd := e.cmd(args...)
	cmd.Stdin = slave
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// version is the version of hello installed.
func (e *pkgEnv) version() string {
	e.t.Helper()
	in, err := extension.OpenStore(e.home).Get("hello")
	if err != nil || in.Extension == nil {
		e.t.Fatalf("hello cannot be read: %v", err)
	}
	return in.Extension.Manifest.Version
}

// TestUpdatePinsWithOneConsent: an installed extension, switched, whose
// new version asks its npx server for another version of its package.
// The update pins that version before it asks, and asks once, showing
// the new command with the new pin. Refused, the extension stays as it
// was: its files, its pin and tree, and the consent to them, so its
// server is still served. Agreed to, the new files, the new pin and the
// consent to both are recorded, and the old tree goes; a second answer
// typed ahead is never read.
func TestUpdatePinsWithOneConsent(t *testing.T) {
	e := newPkgEnv(t, helloAt("1.0.0"))
	src := filepath.Join(e.home, "src", "hello")
	// An installed copy, not a link: update fetches it again from src.
	e.must("extensions", "uninstall", "hello")
	e.must("extensions", "install", src, "--consent")
	publishHello(e.reg, "1.0.0", "1.0.0")
	e.must("extensions", "sandbox", "hello")
	c, granted := e.choice()
	was := c.Packages["hello"]
	if was.Version != "1.0.0" || !granted {
		t.Fatalf("after the switch: pin %+v, consent %v", was, granted)
	}
	publishHello(e.reg, "1.1.0", "1.1.0")
	if err := os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(helloAt("1.1.0")), 0o644); err != nil {
		t.Fatal(err)
	}
	notServed := func(when string) {
		t.Helper()
		if out, _ := e.run("extensions", "doctor"); strings.Contains(out, "has not pinned it") {
			t.Errorf("%s, hello's server is not served:\n%s", when, out)
		}
	}

	for _, tc := range []struct {
		answers string
		agreed  bool
	}{
		{"n\n", false},
		// Before one question, the first answer took the new files with
		// the old pin and the second refused the new pin.
		{"y\nn\n", true},
	} {
		out, err := e.answer(tc.answers, "extensions", "update", "hello")
		if n := strings.Count(out, "Do you want to continue?"); n != 1 {
			t.Errorf("answering %q: asked %d times, want once:\n%s", tc.answers, n, out)
		}
		for _, want := range []string{
			"hello (local: npx -y hello-mcp@1.1.0 --stdio): switched to gemkit",
			"pinned: it runs hello-mcp 1.1.0 (2 packages",
			"changed since you agreed: hello-mcp 1.0.0 → 1.1.0",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("answering %q: the question does not say %q:\n%s", tc.answers, want, out)
			}
		}
		if strings.Contains(out, "pinned: it runs hello-mcp 1.0.0") {
			t.Errorf("answering %q: the question shows the old pin with the new command:\n%s", tc.answers, out)
		}
		c, granted := e.choice()
		now := c.Packages["hello"]
		if !tc.agreed {
			if err == nil || strings.Contains(out, "Updated") || !strings.Contains(out, "consent refused; nothing was changed") {
				t.Errorf("refused: %v\n%s", err, out)
			}
			if v := e.version(); v != "1.0.0" || now.Tree != was.Tree || now.Version != "1.0.0" || !granted || len(e.trees()) != 1 {
				t.Errorf("the refused update left version %s, pin %+v, consent %v, trees %v", v, now, granted, e.trees())
			}
			notServed("after the refused update")
			continue
		}
		if err != nil || !strings.Contains(out, "Updated hello 1.0.0 → 1.1.0") ||
			!strings.Contains(out, "Updated hello's servers' packages: hello hello-mcp 1.0.0 → 1.1.0") {
			t.Errorf("agreed: %v\n%s", err, out)
		}
		if v := e.version(); v != "1.1.0" || now.Version != "1.1.0" || now.Request != "hello-mcp@1.1.0" || !granted || len(e.trees()) != 1 || now.Tree == was.Tree {
			t.Errorf("after the update: version %s, pin %+v, consent %v, trees %v", v, now, granted, e.trees())
		}
		notServed("after the update")
	}

	updatesToRangeAndNoRunner(t, e, src, notServed)
}

// updatesToRangeAndNoRunner: the switched hello installed from src is
// updated to a version asking for a range, then to one without a package
// runner; notServed checks doctor after each.
func updatesToRangeAndNoRunner(t *testing.T, e *pkgEnv, src string, notServed func(when string)) {
	t.Helper()
	// A version whose server asks for the same package otherwise (a
	// range the pinned version is in) is pinned for what it asks, though
	// the registry has nothing new: a pin for another request is not
	// started.
	next := strings.Replace(helloAt("1.2.0"), "hello-mcp@1.2.0", "hello-mcp@^1.1.0", 1)
	if err := os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	out := e.stdout("extensions", "update", "hello", "--consent", "--json")
	var res []extension.UpdateResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 ||
		!slices.Contains(res[0].Changes, extension.Change{Area: "packages", What: "hello hello-mcp 1.1.0 (other packages in its tree)"}) {
		t.Errorf("update --json does not tell of the new pin (%v):\n%s", err, out)
	}
	if c, granted := e.choice(); c.Packages["hello"].Request != "hello-mcp@^1.1.0" || c.Packages["hello"].Version != "1.1.0" || !granted || e.version() != "1.2.0" {
		t.Errorf("after the update to a range: pin %+v, consent %v\n%s", c.Packages["hello"], granted, out)
	}
	notServed("after the update to a range")

	// A version that starts its server without a package runner drops
	// the pin, and its tree goes with it.
	plain := `{"name": "hello", "version": "1.3.0", "description": "A server of its own.",
 "mcpServers": {"hello": {"command": "node", "args": ["${extensionPath}/server.js"]}}}`
	if err := os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(plain), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "server.js"), []byte("// a server\n"), 0o644)
	out = e.stdout("extensions", "update", "hello", "--consent", "--json")
	if c, granted := e.choice(); len(c.Packages) != 0 || !granted || e.version() != "1.3.0" || len(e.trees()) != 0 {
		t.Errorf("after the update to no package runner: pins %+v, consent %v, version %s, trees %v\n%s", c.Packages, granted, e.version(), e.trees(), out)
	}
	res = nil
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 ||
		!slices.Contains(res[0].Changes, extension.Change{Area: "packages", What: "no server fetches a package through a package runner any more: the pins are dropped"}) {
		t.Errorf("update --json does not tell of the pins dropped (%v):\n%s", err, out)
	}
}
