package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSwitchPinsForRuntime: the switch pins what the person's npx runs
// on the node that will start the server, not the latest when that
// needs another Node (firecrawl on Node 20: 3.22.2, not 3.26.0), and
// says which version and why, warns with what to do, and describe says
// it again.
func TestSwitchPinsForRuntime(t *testing.T) {
	e := newPkgEnv(t, `{"name": "hello", "version": "1.0.0", "description": "A server started by npx.",
 "mcpServers": {"hello": {"command": "npx", "args": ["-y", "eng-mcp"]}}}`)
	for _, v := range [][2]string{{"1.1.0", ">=18"}, {"2.0.0", ">=99"}} {
		e.reg.Publish(map[string]string{
			"package.json": `{"name": "eng-mcp", "version": "` + v[0] + `", "bin": "server.js", "engines": {"node": "` + v[1] + `"}}`,
			"server.js":    "#!/usr/bin/env node\n",
		})
	}
	b, err := exec.Command("node", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	node := strings.TrimPrefix(strings.TrimSpace(string(b)), "v")
	out := e.must("extensions", "sandbox", "hello")
	for _, want := range []string{
		"- hello (npx -y eng-mcp): eng-mcp 1.1.0 installed, the newest that runs on Node " + node + "; 2.0.0, the latest, needs node >=99",
		"the newest, eng-mcp 2.0.0, needs node >=99, and the server starts with Node " + node + " (the first node on your PATH): your npx runs 1.1.0 there too. To run 2.0.0, put a Node that satisfies it first on your PATH and run `gemkit extensions update hello --consent`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the switch does not say %q:\n%s", want, out)
		}
	}
	if c, _ := e.choice(); c.Packages["hello"].Version != "1.1.0" {
		t.Errorf("pinned %+v", c.Packages["hello"])
	}
	if out := e.must("extensions", "describe", "hello"); !strings.Contains(out, "it runs eng-mcp 1.1.0 (when pinned, the newest that runs on Node "+node+"; 2.0.0, the latest, needs node >=99; 1 package") {
		t.Errorf("describe does not say why:\n%s", out)
	}
}
