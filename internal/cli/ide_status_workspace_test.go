package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide/discovery"
)

// TestStatusNamesMissingWorkspace: with no discovery file, an endpoint
// from the environment and no workspace path, status says why the CLI
// will refuse, where its own words ("Failed to connect to IDE companion
// extension…") name no cause.
func TestStatusNamesMissingWorkspace(t *testing.T) {
	for _, c := range []struct {
		agent, want string
	}{
		{"", "Workspace: none (GEMINI_CLI_IDE_WORKSPACE_PATH is not set), so the CLI refuses before it tries an endpoint"},
		{client.AgentQwen, "Workspace: none (QWEN_CODE_IDE_WORKSPACE_PATH is not set), so Qwen Code refuses before it tries an endpoint"},
	} {
		r := &client.StatusReport{Agent: c.agent, Endpoints: []client.Endpoint{{Transport: client.TransportStdio, Command: "sh"}},
			Plan: &client.Plan{Workspace: discovery.ErrNoWorkspace}}
		var b bytes.Buffer
		printStatusChoice(&b, r, statusWords(r))
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("agent %q: status says\n%s\nwant %q", c.agent, b.String(), c.want)
		}
		// With a workspace, nothing of it.
		r.Plan.Workspace = nil
		b.Reset()
		printStatusChoice(&b, r, statusWords(r))
		if strings.Contains(b.String(), "Workspace: none") {
			t.Errorf("agent %q with a workspace: %s", c.agent, b.String())
		}
	}
}
