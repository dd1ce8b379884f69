package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
)

// terraformManifest is HashiCorp's published Gemini CLI extension
// (github.com/hashicorp/terraform-mcp-server, gemini-extension.json at
// version 1.1.0), as published: its server is started by docker.
const terraformManifest = `{
  "name": "terraform",
  "version": "1.1.0",
  "contextFileName": "${extensionPath}${/}instructions${/}example-AGENTS.md",
  "mcpServers": {
    "terraform": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "TFE_TOKEN", "-e", "TFE_ADDRESS", "-e", "ENABLE_TF_OPERATIONS", "hashicorp/terraform-mcp-server:1.1.0"],
      "env": {"TFE_TOKEN": "$TFE_TOKEN", "TFE_ADDRESS": "$TFE_ADDRESS", "ENABLE_TF_OPERATIONS": "$ENABLE_TF_OPERATIONS"}
    }
  }
}`

// TestContainerServers: a server a container engine starts (docker,
// podman) is told in gemkit's words wherever the person looks: the
// switch refuses an extension that has only such a server and names why
// (a container engine's daemon runs it outside any sandbox of gemkit's)
// without touching Gemini CLI's settings; beside a server gemkit can
// sandbox, the switch takes that one and leaves the container's to Gemini
// CLI (not in mcp.excluded), and says so; list, describe and doctor say
// where it runs.
func TestContainerServers(t *testing.T) {
	e := newEnv(t)
	tf := filepath.Join(t.TempDir(), "terraform")
	os.MkdirAll(filepath.Join(tf, "instructions"), 0o755)
	os.WriteFile(filepath.Join(tf, "gemini-extension.json"), []byte(terraformManifest), 0o644)
	os.WriteFile(filepath.Join(tf, "instructions", "example-AGENTS.md"), []byte("# Terraform\n"), 0o644)
	e.mustRun("link", tf, "--consent")

	words := "terraform: " + extension.ContainerWords("docker")
	out, errOut, code := e.run("sandbox", "terraform")
	if code != ExitNo || !strings.Contains(errOut, "terraform has no MCP server gemkit can run in its sandbox ("+words+")") {
		t.Errorf("the switch of a docker-started server: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(geminisettings.Path(e.home)); err == nil {
		t.Error("the refused switch wrote Gemini CLI's settings")
	}
	for _, args := range [][]string{{"list"}, {"describe", "terraform"}, {"doctor"}} {
		if out := e.mustRun(args...); !strings.Contains(out, words) {
			t.Errorf("%v does not say %q:\n%s", args, words, out)
		}
	}
	if out := e.describe("terraform"); strings.Contains(out, "In gemkit's sandbox each can") || strings.Contains(out, "--allow-env") {
		t.Errorf("describe speaks of a sandbox the server never runs in:\n%s", out)
	}

	// Beside a server gemkit sandboxes: that one is switched, the
	// container's stays Gemini CLI's.
	mixed := filepath.Join(t.TempDir(), "mixed")
	os.MkdirAll(mixed, 0o755)
	os.WriteFile(filepath.Join(mixed, "gemini-extension.json"), []byte(`{"name": "mixed", "version": "1.0.0", "mcpServers": {
  "local": {"command": "node", "args": ["${extensionPath}/server.js"]},
  "boxed": {"command": "podman", "args": ["run", "-i", "--rm", "example/mcp"]}}}`), 0o644)
	os.WriteFile(filepath.Join(mixed, "server.js"), []byte(miniServer), 0o644)
	e.mustRun("link", mixed, "--consent")
	out = e.mustRun("sandbox", "mixed")
	if !strings.Contains(out, "Not switched: boxed, "+extension.ContainerWords("podman")+".") || !strings.Contains(out, "boxed (local: podman run -i --rm example/mcp): "+extension.ContainerWords("podman")) {
		t.Errorf("the switch of a mixed extension:\n%s", out)
	}
	gs, err := geminisettings.Read(geminisettings.Path(e.home))
	if err != nil || strings.Join(gs.Excluded, ",") != "local" {
		t.Errorf("mcp.excluded %v, %v; want the sandboxed server only", gs.Excluded, err)
	}
	if out := e.mustRun("list"); !strings.Contains(out, "servers of mixed: local: in gemkit's sandbox (gemkit mcp), not started by Gemini CLI; back: gemkit extensions sandbox mixed --off; boxed: "+extension.ContainerWords("podman")) {
		t.Errorf("list:\n%s", out)
	}

	// Switched before gemkit left such servers to Gemini CLI: the
	// container's server is in mcp.excluded, and nothing starts it;
	// doctor says so, and the switch gives it back.
	st := extension.OpenStore(e.home)
	if _, _, err := geminisettings.Exclude(geminisettings.Path(e.home), []string{"boxed"}); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateServerChoice("mixed", func(c *extension.ServerChoice, _ *[]string) { c.Excluded = append(c.Excluded, "boxed") }); err != nil {
		t.Fatal(err)
	}
	if out := e.mustRun("doctor"); !strings.Contains(out, "an earlier switch put boxed in Gemini CLI's mcp.excluded") {
		t.Errorf("doctor does not tell of the stuck server:\n%s", out)
	}
	e.mustRun("sandbox", "mixed")
	if gs, _ := geminisettings.Read(geminisettings.Path(e.home)); strings.Join(gs.Excluded, ",") != "local" {
		t.Errorf("mcp.excluded after the switch again: %v", gs.Excluded)
	}
	if sw, _ := st.Switches(); len(sw.Names) != 1 || strings.Join(sw.Names["local"].Needs, ",") != "mixed" {
		t.Errorf("recorded names %v", sw.Names)
	}
	if out := e.mustRun("doctor"); strings.Contains(out, "an earlier switch put boxed") {
		t.Errorf("doctor still tells of the stuck server:\n%s", out)
	}
}
