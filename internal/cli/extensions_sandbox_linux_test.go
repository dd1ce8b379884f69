package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestSandboxFromAgentShell: run by an agent's shell with no terminal,
// the switch (which records consent) and a widening are refused with the
// command to run in a terminal of one's own, and change nothing: neither
// Gemini CLI's settings nor gemkit's records.
func TestSandboxFromAgentShell(t *testing.T) {
	bin := gemkittest.Gemkit(t)
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "srv-ext")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(sandboxManifest), 0o644)
	e.mustRun("link", src, "--consent")
	e.mustRun("consent", "srv-ext", "--revoke")
	st := extension.OpenStore(e.home)
	agent := func(args ...string) string {
		cmd := exec.Command(bin, append([]string{"extensions", "--home", e.home, "--workspace", e.ws}, args...)...)
		cmd.Env = append(os.Environ(), "GEMINI_CLI=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%v from an agent's shell: exit 0\n%s", args, out)
		}
		return string(out)
	}
	out := agent("sandbox", "srv-ext")
	if !strings.Contains(out, "Only you can agree: run `gemkit extensions sandbox srv-ext` in a terminal of your own") {
		t.Errorf("the switch from an agent's shell:\n%s", out)
	}
	if _, err := os.Stat(geminisettings.Path(e.home)); err == nil {
		t.Error("the refused switch wrote Gemini CLI's settings")
	}
	if c, _ := st.ServerChoice("srv-ext"); c.Switched {
		t.Error("the refused switch was recorded")
	}

	// Switched and agreed in a terminal; a widening asked by the agent
	// is refused all the same.
	e.mustRun("sandbox", "srv-ext")
	before, _ := os.ReadFile(geminisettings.Path(e.home))
	out = agent("sandbox", "srv-ext", "--allow-host", "evil.example.com")
	if !strings.Contains(out, "run `gemkit extensions sandbox srv-ext --allow-host evil.example.com` in a terminal of your own") {
		t.Errorf("the widening from an agent's shell:\n%s", out)
	}
	if c, _ := st.ServerChoice("srv-ext"); len(c.Hosts) != 0 {
		t.Errorf("the refused widening was recorded: %+v", c)
	}
	if after, _ := os.ReadFile(geminisettings.Path(e.home)); string(after) != string(before) {
		t.Errorf("the refused widening changed Gemini CLI's settings:\n%s", after)
	}
	if !st.ConsentGranted("srv-ext", extension.PermissionsHash(readManifest(t, src))) {
		t.Error("the consent given in the terminal does not hold after the refused widening")
	}
}
