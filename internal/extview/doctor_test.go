package extview

import (
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
)

// TestRefusalFindings: doctor says one start's refusals as one finding,
// a line per host, and one command for what the server likely needs.
func TestRefusalFindings(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rs := []extmcp.Refusal{
		{Extension: "e", Server: "s", Start: start, At: start.Add(time.Second), Host: "registry.npmjs.org:443", Reason: "host not in network.allowedHosts", Background: "update check", Allow: "gemkit extensions sandbox e --allow-host registry.npmjs.org:443"},
		{Extension: "e", Server: "s", Start: start, At: start.Add(2 * time.Second), Host: "api.example.com:443", Reason: "host not in network.allowedHosts", Needed: "named in the call's arguments", Allow: "gemkit extensions sandbox e --allow-host api.example.com:443"},
	}
	fs := refusalFindings("e", extmcp.StillRefused(rs, extension.Widening{}, nil, time.Time{}))
	if len(fs) != 1 {
		t.Fatalf("%d findings, want one: %+v", len(fs), fs)
	}
	lines := strings.Split(fs[0].Message, "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "extension e's MCP server s was refused in its run started ") ||
		!strings.Contains(lines[1], "api.example.com:443 (named in the call's arguments)") || !strings.Contains(lines[2], "registry.npmjs.org:443: host not in network.allowedHosts; in the background (update check)") {
		t.Errorf("message:\n%s", fs[0].Message)
	}
	if fs[0].Fix != "`gemkit extensions sandbox e --allow-host api.example.com:443` allows what it likely needs (what servers do in the background left out)" {
		t.Errorf("fix %q", fs[0].Fix)
	}
}
