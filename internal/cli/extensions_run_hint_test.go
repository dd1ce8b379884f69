package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// The libraries say why a run is refused; the command adds which of its
// flags answers the refusal, and keeps the error's type for callers.
func TestRunHintNamesTheFlag(t *testing.T) {
	t.Parallel()
	unenforceable := &sandbox.UnenforceableError{Reasons: []string{"Landlock is not available"}}
	noTerminal := &toolrun.ConsentError{Extension: "demo", Lines: []string{"read files in your workspace"}}
	changed := &toolrun.ConsentError{Extension: "demo", Lines: []string{"read files in your workspace"},
		Notice: "Since you agreed, this file of the extension changed: t.sh (changed). Look at it in /ext before agreeing again."}
	declined := &toolrun.ConsentError{Extension: "demo", Declined: true}
	home := &sandbox.HomeWorkspaceError{Workspace: "/", Holds: true}
	other := errors.New("tool demo failed")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"unenforceable", fmt.Errorf("run: %w", unenforceable),
			"run: this machine cannot enforce the extension's permissions: Landlock is not available; refusing to run; pass --allow-unconfined to run anyway with the listed protections missing"},
		{"no terminal to ask", noTerminal,
			"extension demo needs your consent before its tools run (it may: read files in your workspace), and there is no terminal to ask on; to agree, run `gemkit extensions consent demo --grant` (it shows what you agree to and runs nothing), or pass --consent"},
		{"files changed, no terminal to ask", changed,
			"extension demo needs your consent again before its tools run, and there is no terminal to ask on. " +
				"Since you agreed, this file of the extension changed: t.sh (changed). Look at it in /ext before agreeing again. " +
				"Its tools may: read files in your workspace; to agree, run `gemkit extensions consent demo --grant` (it shows what you agree to and runs nothing), or pass --consent"},
		{"workspace holds the home folder", fmt.Errorf("tool t: filesystem.read scope: %w", home),
			`tool t: filesystem.read scope: the workspace "/" is a folder that holds your home folder, so a tool allowed the workspace would reach all of it (~/.ssh, ~/.local/bin, ~/.config/autostart, every project); run it with a project folder as its workspace (--workspace names it)`},
		{"declined", declined, declined.Error()},
		{"other", other, "tool demo failed"},
	}
	for _, tt := range tests {
		got := withRunHint(tt.err)
		if got.Error() != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
		if !errors.Is(got, tt.err) {
			t.Errorf("%s: the hint lost the error it wraps", tt.name)
		}
	}
}

// TestEnforcementNamesTheFlags: the sandbox's notes say what is not
// enforced and what bounds memory; describe adds the flags that change
// them.
func TestEnforcementNamesTheFlags(t *testing.T) {
	t.Parallel()
	notes := withFlags(sandbox.Describe(permission.Policy{AllowedHosts: []string{"example.com"}}, sandbox.Capabilities{OS: "linux", Memory: "cgroup v2", NamespaceErr: "no user namespaces"}))
	var refuses, memory bool
	for _, n := range notes {
		switch {
		case n.Refuses:
			refuses = true
			if !strings.HasSuffix(n.How, "runs are refused unless running unconfined is allowed (--allow-unconfined)") {
				t.Errorf("%s: %q, want the refusal and --allow-unconfined", n.Permission, n.How)
			}
		case n.Permission == "memory":
			memory = true
			if !strings.HasSuffix(n.How, "; --memory sets the memory bound") || strings.Count(n.How, "--memory") != 1 {
				t.Errorf("memory: %q, want --memory once, at the end", n.How)
			}
		case strings.Contains(n.How, "--"):
			t.Errorf("%s: %q names a flag", n.Permission, n.How)
		}
	}
	if !refuses || !memory {
		t.Errorf("notes %+v: want a refusing note and a memory note", notes)
	}
}

// TestConsentQuestion: the terminal's question puts the files changed
// since an earlier consent on a line of their own, before the
// permissions and not among them.
func TestConsentQuestion(t *testing.T) {
	t.Parallel()
	lines := []string{"read files in your workspace", "no network access"}
	for _, c := range []struct {
		name string
		q    toolrun.ConsentRequest
		want string
	}{
		{"first time", toolrun.ConsentRequest{Extension: "demo", Lines: lines},
			"Extension \"demo\" wants to run a tool. Its tools may:\n  - read files in your workspace\n  - no network access\n"},
		{"files changed", toolrun.ConsentRequest{Extension: "demo", Lines: lines,
			Notice: "Since you agreed, this file of the extension changed: t.sh (changed). Look at it in /ext before agreeing again."},
			"Extension \"demo\" wants to run a tool.\n" +
				"Since you agreed, this file of the extension changed: t.sh (changed). Look at it in /ext before agreeing again.\n" +
				"Its tools may:\n  - read files in your workspace\n  - no network access\n"},
	} {
		if got := consentQuestion(c.q); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
