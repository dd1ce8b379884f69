package extension

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestConsentTextServers: the consent text says, per MCP server, whether
// gemkit mcp can run it in its sandbox and what it can do there, with or
// without permissions (those are its tools'), and what the person
// allowed beyond the default profile; a remote server, that gemkit does
// not sandbox it and who connects to it, switched or not.
func TestConsentTextServers(t *testing.T) {
	servers := map[string]json.RawMessage{
		"local":  json.RawMessage(`{"command": "node", "args": ["server.js"]}`),
		"remote": json.RawMessage(`{"httpUrl": "https://mcp.example.com/mcp"}`),
		"self":   json.RawMessage(`{"command": "gemkit", "args": ["mcp", "--extension", "."]}`),
	}
	want := map[string]bool{"local": true, "remote": false, "self": false} // server: sandboxed
	others := map[string]string{"self": ": gemkit itself, which runs the extension's tools in their own sandbox"}
	// Consent names the origin gemkit mcp reaches, and no other.
	reach := "gemkit mcp reaches https://mcp.example.com:443 and no other origin: it follows no redirect elsewhere, and an address of this computer or of a private network there is refused unless you allowed that very host and port (gemkit extensions sandbox srv --allow-host HOST:PORT)"
	remote := map[bool]string{
		false: ": a remote server, not sandboxed by gemkit: Gemini CLI connects to it itself until you switch the extension to gemkit (gemkit extensions sandbox srv); then " + RemoteServerWords + "; " + reach,
		true:  ": a remote server, switched to gemkit: Gemini CLI does not connect to it; " + RemoteServerWords + "; " + reach,
	}
	for _, tc := range []struct {
		name     string
		perms    *Permissions
		choice   ServerChoice
		words    string
		switched bool
	}{
		{name: "no permissions", words: SandboxedServerWordsFor("srv")},
		{name: "permissions", perms: &Permissions{}, words: SandboxedServerWordsFor("srv")},
		// What the manifest declares its servers take (but a cloud's
		// metadata service), under the person's widening.
		{name: "permissions its servers take", perms: &Permissions{Filesystem: &FilesystemPermissions{Read: AccessWorkspace, Write: AccessWorkspace},
			Network: &NetworkPermissions{AllowedHosts: []string{"localhost:8080", "169.254.169.254"}}},
			choice: ServerChoice{Widening: Widening{Env: []string{"TFE_TOKEN"}}},
			words: SandboxedServerWordsFor("srv") + "; and, as its manifest's permissions declare, create, change and delete files in your workspace (its protected paths excepted); connect to localhost:8080 (and no other host)" +
				"; and, as you allowed, see your variable TFE_TOKEN (from the environment of the gemkit mcp that starts it)"},
		{name: "widened and switched", choice: ServerChoice{Switched: true, Widening: Widening{Hosts: []string{"api.example.com"}, Write: AccessWorkspace}},
			words: SandboxedServerWordsFor("srv") + "; and, as you allowed, create, change and delete files in your workspace (its protected paths excepted); connect to api.example.com (and no other host)", switched: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manifest{Name: "srv", Version: "1", Permissions: tc.perms, MCPServers: servers}
			text := strings.Join(ConsentTextWith(&Extension{Manifest: m}, "Installing", tc.choice), "\n")
			// Without tools, the permissions are said only when the
			// manifest declares them, as its servers' too.
			if got := strings.Contains(text, "Its permissions (its MCP servers take what of them a server can have, as said below):"); got != (tc.perms != nil) {
				t.Errorf("the text says what its permissions are: %v, want %v:\n%s", got, tc.perms != nil, text)
			}
			for name, sandboxed := range want {
				if got := SandboxedServer(servers[name]); got != sandboxed {
					t.Errorf("SandboxedServer(%s) = %v, want %v", name, got, sandboxed)
				}
				if name == "remote" {
					others[name] = remote[tc.switched]
				}
				var line string
				for _, l := range strings.Split(text, "\n") {
					if strings.HasPrefix(l, "  - "+name+" (") {
						line = l
					}
				}
				if sandboxed != strings.HasSuffix(line, "runs it in gemkit's sandbox, where it can "+tc.words) ||
					!sandboxed && !strings.HasSuffix(line, others[name]) {
					t.Errorf("server %s: line %q", name, line)
				}
				// The data folder is the extension's own, as on disk.
				if sandboxed && (!strings.Contains(line, "(~/.local/share/gemkit/extension-data/srv)") || strings.Contains(line, "<extension>")) {
					t.Errorf("server %s: the line does not name the data folder: %q", name, line)
				}
				if sandboxed && tc.switched != strings.Contains(line, "switched to gemkit: Gemini CLI does not start it") {
					t.Errorf("server %s: switched %v, line %q", name, tc.switched, line)
				}
				if sandboxed && !tc.switched && !strings.Contains(line, "gemkit extensions sandbox srv") {
					t.Errorf("server %s: the line does not say how to switch: %q", name, line)
				}
			}
		})
	}
	// A tool without declared permissions gets the narrowest, and the
	// text says so.
	withTool := &Manifest{Name: "srv", Version: "1", MCPServers: servers, Tools: []Tool{{Name: "t", Executable: "t.sh", Runtime: "shell"}}}
	if text := strings.Join(ConsentText(&Extension{Manifest: withTool}, "Installing"), "\n"); !strings.Contains(text, "Its tools will be able to:\n  - no access to your files") {
		t.Errorf("the text of an extension with a tool does not say what it can do:\n%s", text)
	}
	m := &Manifest{MCPServers: servers}
	if got := SandboxedServers(m); strings.Join(got, ",") != "local" {
		t.Errorf("SandboxedServers = %v", got)
	}
	if got := RemoteServers(m); strings.Join(got, ",") != "remote" {
		t.Errorf("RemoteServers = %v", got)
	}
	if got := SwitchedServers(m); strings.Join(got, ",") != "local,remote" {
		t.Errorf("SwitchedServers = %v", got)
	}
	// Without a server to sandbox there is no switch to offer.
	alone := &Manifest{Name: "far", MCPServers: map[string]json.RawMessage{"remote": servers["remote"], "tcp": json.RawMessage(`{"tcp": "127.0.0.1:9000"}`)}}
	lines := strings.Join(ServerLines(alone, ServerChoice{}), "\n")
	for _, want := range []string{
		"remote (remote: https://mcp.example.com/mcp): a remote server, not sandboxed by gemkit: Gemini CLI connects to it itself\n",
		"tcp (remote: tcp 127.0.0.1:9000): a remote server (or none), not sandboxed by gemkit",
	} {
		if !strings.Contains(lines+"\n", want) {
			t.Errorf("lines of a remote-only extension lack %q:\n%s", want, lines)
		}
	}
}

// TestWideningConsent: a widening of an extension's MCP servers is part
// of the consent hash: consent given before it does not hold after, one
// given after it holds, and narrowing back to the default profile brings
// back the consent recorded without any.
func TestWideningConsent(t *testing.T) {
	st := OpenStore(t.TempDir())
	const name, perm = "ext", "sha256:perm"
	if err := st.RecordConsent(name, perm); err != nil {
		t.Fatal(err)
	}
	if !st.ConsentGranted(name, perm) {
		t.Fatal("consent without a widening does not hold")
	}
	widen := func(w Widening) {
		t.Helper()
		if err := st.UpdateServerChoice(name, func(c *ServerChoice, _ *[]string) { c.Widening = w }); err != nil {
			t.Fatal(err)
		}
	}
	hosts := Widening{Hosts: []string{"api.example.com"}}
	widen(hosts)
	if st.ConsentGranted(name, perm) {
		t.Fatal("consent given before a widening still holds after it")
	}
	if err := st.RecordConsent(name, perm); err != nil {
		t.Fatal(err)
	}
	if !st.ConsentGranted(name, perm) {
		t.Fatal("consent given with the widening does not hold")
	}
	widen(Widening{Hosts: []string{"api.example.com"}, Write: AccessWorkspace})
	if st.ConsentGranted(name, perm) {
		t.Fatal("consent to one widening holds for a wider one")
	}
	if err := st.RecordConsent(name, perm); err != nil {
		t.Fatal(err)
	}
	widen(Widening{Hosts: []string{"api.example.com"}, Write: AccessWorkspace, UnixSockets: true})
	if st.ConsentGranted(name, perm) {
		t.Fatal("consent given without Unix sockets holds with them")
	}
	if h1, h2 := hosts.hash(perm), (Widening{Hosts: []string{"other.example.com"}}).hash(perm); h1 == h2 || h1 == perm {
		t.Fatalf("widenings hash alike: %s %s", h1, h2)
	}
	if h := (Widening{UnixSockets: true}).hash(perm); h == perm {
		t.Fatal("Unix sockets are not part of the consent hash")
	}
	// Credentials and variables by name are agreed to like the rest.
	for _, w := range []Widening{{Credentials: []string{"gcloud"}}, {Env: []string{"TFE_TOKEN"}}} {
		if h := w.hash(perm); h == perm || h == (Widening{Credentials: []string{"aws"}}).hash(perm) {
			t.Fatalf("%+v is not part of the consent hash", w)
		}
		widen(w)
		if st.ConsentGranted(name, perm) {
			t.Fatalf("consent given before %+v holds after it", w)
		}
		if err := st.RecordConsent(name, perm); err != nil {
			t.Fatal(err)
		}
	}
	widen(Widening{})
	if c, err := st.ServerChoice(name); err != nil || !c.Widening.Empty() {
		t.Fatalf("choice after narrowing: %+v, %v", c, err)
	}
	if st.ConsentGranted(name, perm) {
		t.Fatal("the record made under a widening holds for the default profile")
	}
}

// TestWideningCanonical: hosts are canonical and sorted, the write
// scope is the workspace or nothing, and bad input says what is wrong.
func TestWideningCanonical(t *testing.T) {
	w, err := Widening{Hosts: []string{"HTTPS://API.example.com/", "a.example.com", "a.example.com"}, Write: AccessNone}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(w.Hosts, ",") != "a.example.com,https://api.example.com" || w.Write != "" {
		t.Errorf("Canonical = %+v", w)
	}
	if _, err := (Widening{Write: AccessHome}).Canonical(); err == nil || !strings.Contains(err.Error(), "workspace") {
		t.Errorf("write home: %v", err)
	}
	if _, err := (Widening{Hosts: []string{"http://"}}).Canonical(); err == nil {
		t.Error("an empty host is taken")
	}
}

// TestWideningCredentialsAndEnv: credentials only of the kinds a server
// can be handed, variables by name but those gemkit sets, and no cloud
// metadata service as a host, each refused in words that say what to
// do instead.
func TestWideningCredentialsAndEnv(t *testing.T) {
	w, err := Widening{Credentials: []string{"kube", "gcloud", "gcloud"}, Env: []string{"TFE_TOKEN", "A_B"}}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(w.Credentials, ",") != "gcloud,kube" || strings.Join(w.Env, ",") != "A_B,TFE_TOKEN" {
		t.Errorf("Canonical = %+v", w)
	}
	for _, c := range []struct {
		w    Widening
		want string
	}{
		{Widening{Credentials: []string{"ssh"}}, "the kinds a server can be given: gcloud, aws, kube"},
		{Widening{Credentials: []string{"nope"}}, "is not a kind of credentials gemkit hands to an MCP server"},
		{Widening{Env: []string{"HOME"}}, "set by gemkit itself"},
		{Widening{Env: []string{"https_proxy"}}, "set by gemkit itself"},
		{Widening{Env: []string{"1X"}}, "is not a variable's name"},
		{Widening{Env: []string{"A=B"}}, "is not a variable's name"},
		{Widening{Hosts: []string{"169.254.169.254"}}, "--allow-credentials gcloud, or --allow-credentials aws"},
		{Widening{Hosts: []string{"http://metadata.google.internal"}}, "looking for credentials; to hand it yours, by kind: --allow-credentials gcloud"},
		{Widening{Hosts: []string{"[fd00:ec2::254]:80"}}, "--allow-credentials aws"},
	} {
		if _, err := c.w.Canonical(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.w, err, c.want)
		}
	}
}

// TestServerGrant: what a manifest's permissions give its servers: its
// hosts (but a metadata service), the workspace for any write scope,
// the kinds of credentials a server can be handed; its permissions hash
// says so (a consent given before asks again), and a manifest whose
// servers take nothing hashes as before.
func TestServerGrant(t *testing.T) {
	servers := map[string]json.RawMessage{"local": json.RawMessage(`{"command": "node"}`)}
	m := &Manifest{Name: "srv", Version: "1", MCPServers: servers, Permissions: &Permissions{
		Filesystem: &FilesystemPermissions{Read: AccessHome, Write: AccessHome, Credentials: []string{"gcloud", "npm"}},
		Network:    &NetworkPermissions{AllowedHosts: []string{"https://api.example.com", "metadata.google.internal", "localhost:8080"}}}}
	g := ServerGrant(m)
	if strings.Join(g.Hosts, ",") != "https://api.example.com,localhost:8080" || g.Write != AccessWorkspace || strings.Join(g.Credentials, ",") != "gcloud" || g.UnixSockets || len(g.Env) > 0 {
		t.Errorf("ServerGrant = %+v", g)
	}
	tools := *m
	tools.MCPServers = nil
	if !ServerGrant(&Manifest{Name: "x"}).Empty() {
		t.Error("no permissions grant something")
	}
	if PermissionsHash(m) == PermissionsHash(&tools) {
		t.Error("the permissions hash does not say that the servers take them")
	}
	none := &Manifest{Name: "srv", Version: "1", MCPServers: servers, Permissions: &Permissions{Filesystem: &FilesystemPermissions{Read: AccessWorkspace}}}
	bare := *none
	bare.MCPServers = nil
	if PermissionsHash(none) != PermissionsHash(&bare) {
		t.Error("a manifest whose servers take nothing hashes otherwise than before")
	}
	if m.Terms().Hash != PermissionsHash(m) {
		t.Error("Terms and PermissionsHash disagree")
	}
	u := g.Union(Widening{Hosts: []string{"a.example.com", "localhost:8080"}, Env: []string{"X"}})
	if strings.Join(u.Hosts, ",") != "a.example.com,https://api.example.com,localhost:8080" || u.Write != AccessWorkspace || strings.Join(u.Env, ",") != "X" {
		t.Errorf("Union = %+v", u)
	}
}

// TestDroppedVars: the person's variables a sandboxed server's env asks
// for that no setting declares (terraform's "TFE_TOKEN": "$TFE_TOKEN"),
// in both spellings, but HOME and those passed by name.
func TestDroppedVars(t *testing.T) {
	m := &Manifest{Name: "terraform", Version: "1", Settings: []Setting{{Name: "Org", EnvVar: "TFE_ORG"}},
		MCPServers: map[string]json.RawMessage{
			"terraform": json.RawMessage(`{"command": "node", "env": {"TFE_TOKEN": "$TFE_TOKEN", "TFE_ADDRESS": "${TFE_ADDRESS:-https://app.terraform.io}", "ORG": "$TFE_ORG", "DATA": "$HOME/x"}}`),
			"remote":    json.RawMessage(`{"httpUrl": "https://x.example.com", "env": {"Y": "$Y"}}`),
		}}
	got := DroppedVars(m, nil)
	want := []DroppedVar{{"terraform", "TFE_ADDRESS", "TFE_ADDRESS"}, {"terraform", "TFE_TOKEN", "TFE_TOKEN"}}
	if !slices.Equal(got, want) {
		t.Errorf("DroppedVars = %+v, want %+v", got, want)
	}
	if got := DroppedVars(m, []string{"TFE_TOKEN", "TFE_ADDRESS"}); len(got) > 0 {
		t.Errorf("passed by name, still dropped: %+v", got)
	}
}

// TestPinsInConsentHash: the packages pinned for an extension's
// package-runner servers are part of the consent hash: consent given
// before a pin, or to another version or another tree, does not hold;
// without pins the hash is the widening's, as before pins existed.
func TestPinsInConsentHash(t *testing.T) {
	st := OpenStore(t.TempDir())
	const name, perm = "pinned", "sha256:perm"
	c := ServerChoice{Widening: Widening{Hosts: []string{"api.example.com"}}}
	if h := c.Widening.hash(perm); c.pinsHash(h) != h {
		t.Fatal("a choice without pins does not hash as before pins")
	}
	if err := st.RecordConsent(name, perm); err != nil {
		t.Fatal(err)
	}
	pin := Pin{Runner: "npx", Request: "@upstash/context7-mcp", Package: "@upstash/context7-mcp", Version: "4.1.1", Tree: "/t/a", Program: "node_modules/x/index.js", Lock: "l1", Digest: "d1"}
	set := func(p map[string]Pin) {
		t.Helper()
		if err := st.UpdateServerChoice(name, func(c *ServerChoice, _ *[]string) { c.Packages = p }); err != nil {
			t.Fatal(err)
		}
	}
	set(map[string]Pin{"context7": pin})
	if st.ConsentGranted(name, perm) {
		t.Fatal("consent given before the pin holds after it")
	}
	if err := st.RecordConsent(name, perm); err != nil {
		t.Fatal(err)
	}
	if !st.ConsentGranted(name, perm) {
		t.Fatal("consent given with the pin does not hold")
	}
	for _, change := range []func(p *Pin){
		func(p *Pin) { p.Version = "4.1.2" },
		func(p *Pin) { p.Digest = "d2" },
		func(p *Pin) { p.Lock = "l2" },
		func(p *Pin) { p.Tree = "/t/b" },
		func(p *Pin) { p.ScriptsRun = true },
	} {
		p := pin
		change(&p)
		set(map[string]Pin{"context7": p})
		if st.ConsentGranted(name, perm) {
			t.Errorf("consent to %+v holds for %+v", pin, p)
		}
	}
	set(map[string]Pin{"context7": pin})
	if !st.ConsentGranted(name, perm) {
		t.Fatal("consent does not hold for the pin it was given to")
	}
	if err := st.UpdateServerChoice(name, func(c *ServerChoice, _ *[]string) { c.InstallScripts = true }); err != nil {
		t.Fatal(err)
	}
	if st.ConsentGranted(name, perm) {
		t.Fatal("consent holds once install scripts are allowed")
	}
	// A choice of pins alone is kept, not dropped as empty.
	if ch, _ := st.ServerChoice(name); len(ch.Packages) != 1 {
		t.Fatalf("the pins were not kept: %+v", ch)
	}
	text := strings.Join(ServerLines(&Manifest{Name: name, MCPServers: map[string]json.RawMessage{"context7": json.RawMessage(`{"command": "npx", "args": ["-y", "@upstash/context7-mcp"]}`)}},
		ServerChoice{Packages: map[string]Pin{"context7": pin}}), "\n")
	if !strings.Contains(text, "pinned: it runs @upstash/context7-mcp 4.1.1") || !strings.Contains(text, "with no registry access") {
		t.Errorf("the consent text does not say what runs:\n%s", text)
	}
}

// TestRunnerRefusedLines: a server whose package runner's line gemkit
// cannot run (npx -c, a git package, uvx) is told as staying Gemini
// CLI's before the person agrees, and so is every other server of the
// extension, since the switch refuses the extension while that line
// stays; switched (a manifest changed after the switch), the line says
// gemkit mcp does not start it and how to give it back. Before, each
// read "then gemkit mcp runs it in gemkit's sandbox", which the switch
// then refused.
func TestRunnerRefusedLines(t *testing.T) {
	good := json.RawMessage(`{"command": "npx", "args": ["-y", "hello-mcp"]}`)
	remote := json.RawMessage(`{"httpUrl": "https://mcp.example.com/mcp"}`)
	tests := []struct {
		name, bad string
		def       json.RawMessage
		why       string
	}{
		{"shell string", "shell", json.RawMessage(`{"command": "npx", "args": ["-c", "hello-mcp --stdio"]}`), "its npx command line cannot be pinned"},
		{"git package", "git", json.RawMessage(`{"command": "npx", "args": ["-y", "github:someone/server"]}`), "outside the registry"},
		{"PyPI", "py", json.RawMessage(`{"command": "uvx", "args": ["mcp-server-fetch"]}`), "uvx fetches mcp-server-fetch from PyPI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manifest{Name: "mixed", MCPServers: map[string]json.RawMessage{tt.bad: tt.def, "good": good, "remote": remote}}
			if got := RunnerRefused(m, nil); strings.Join(got, ",") != tt.bad {
				t.Errorf("RunnerRefused = %v, want [%s]", got, tt.bad)
			}
			lines := ServerLines(m, ServerChoice{})
			text := strings.Join(lines, "\n")
			if strings.Contains(text, "then gemkit mcp runs it") || strings.Contains(text, "until you switch") {
				t.Errorf("a line promises the sandbox after a switch that would be refused:\n%s", text)
			}
			for _, l := range lines {
				switch {
				case strings.HasPrefix(l, tt.bad+" "):
					if !strings.Contains(l, "cannot switch the extension to gemkit while this line stays: ") || !strings.Contains(l, tt.why) {
						t.Errorf("the refused server's line: %s", l)
					}
				case strings.HasPrefix(l, "good "):
					if !strings.Contains(l, "Gemini CLI starts it unconfined") || !strings.Contains(l, "while "+tt.bad+" cannot run there") {
						t.Errorf("the other server's line: %s", l)
					}
				}
			}
			switched := strings.Join(ServerLines(m, ServerChoice{Switched: true}), "\n")
			if !strings.Contains(switched, "switched to gemkit, but gemkit mcp does not start it: ") || !strings.Contains(switched, "gemkit extensions sandbox mixed --off") {
				t.Errorf("switched, the refused server's line does not say it stays off:\n%s", switched)
			}
			if !strings.Contains(switched, "good (local: npx -y hello-mcp): switched to gemkit: Gemini CLI does not start it, gemkit mcp runs it") {
				t.Errorf("switched, the servable server's line changed:\n%s", switched)
			}
		})
	}
	// An agent's refused server holds back the manifest's too.
	agents := []AgentServer{{Agent: "helper", Server: "py", Def: json.RawMessage(`{"command": "uvx", "args": ["x"]}`)}}
	m := &Manifest{Name: "a", MCPServers: map[string]json.RawMessage{"good": good}}
	if got := strings.Join(serverLines(m, ServerChoice{}, RunnerRefused(m, agents)), "\n"); !strings.Contains(got, "while helper/py cannot run there") {
		t.Errorf("an agent's refused server does not hold back the manifest's: %s", got)
	}
	if got := RunnerRefused(&Manifest{MCPServers: map[string]json.RawMessage{"good": good, "node": json.RawMessage(`{"command": "node", "args": ["s.js"]}`)}}, nil); len(got) != 0 {
		t.Errorf("RunnerRefused of servable servers = %v", got)
	}
}
