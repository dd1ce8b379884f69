package extmcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// TestRefusalWords: each refusal says which extension, which server,
// what it tried and the one command that allows it; what no widening
// allows has no command.
func TestRefusalWords(t *testing.T) {
	sp := Spec{Extension: "weather", Server: "api"}
	const noProxyCaveat = " (only the sandbox's proxy, named in HTTPS_PROXY and HTTP_PROXY, leads to an allowed host, and this server's client did not use it: allowing the host helps only if it does)"
	for _, c := range []struct {
		d      netproxy.Denial
		person string
		model  string
	}{
		{netproxy.Denial{Method: "CONNECT", Host: "api.example.com", Port: 443, Reason: netproxy.NotAllowed},
			"extension weather's MCP server api was refused a connection to api.example.com:443 (host not in network.allowedHosts); to allow it: gemkit extensions sandbox weather --allow-host api.example.com:443",
			"gemkit's sandbox refused this MCP server during the call: a connection to api.example.com:443. The person (not the model) can allow it with: gemkit extensions sandbox weather --allow-host api.example.com:443"},
		{netproxy.Denial{Method: netproxy.LookupMethod, Host: "api.example.com", Reason: netproxy.LookupNotAllowed},
			"extension weather's MCP server api was refused the host api.example.com (name looked up without the sandbox's proxy; host not allowed); to allow it: gemkit extensions sandbox weather --allow-host api.example.com (an allowed host is reached through the proxy named in HTTPS_PROXY and HTTP_PROXY, which the server's client must use)",
			"gemkit's sandbox refused this MCP server during the call: the host api.example.com (looked up without the sandbox's proxy). The person (not the model) can allow it with: gemkit extensions sandbox weather --allow-host api.example.com" + noProxyCaveat},
		{netproxy.Denial{Method: "GET", Host: "127.0.0.1", Port: 7777, Reason: "port 7777 on this machine is one of gemkit's own servers"},
			"extension weather's MCP server api was refused a connection to 127.0.0.1:7777 (port 7777 on this machine is one of gemkit's own servers)",
			"gemkit's sandbox refused this MCP server during the call: a connection to 127.0.0.1:7777: port 7777 on this machine is one of gemkit's own servers."},
		{netproxy.Denial{Method: sandbox.DirectMethod, Host: "10.0.0.5", Port: 443, Reason: sandbox.DirectNotAllowed},
			"extension weather's MCP server api was refused a connection to 10.0.0.5:443 (connection without the sandbox's proxy; host not allowed); to allow it: gemkit extensions sandbox weather --allow-host 10.0.0.5:443 (an allowed host is reached through the proxy named in HTTPS_PROXY and HTTP_PROXY, which the server's client must use)",
			"gemkit's sandbox refused this MCP server during the call: a connection to 10.0.0.5:443 (without the sandbox's proxy). The person (not the model) can allow it with: gemkit extensions sandbox weather --allow-host 10.0.0.5:443" + noProxyCaveat},
		{netproxy.Denial{Method: "CONNECT", Host: "a;touch x", Port: 443, Reason: netproxy.NotAllowed},
			"extension weather's MCP server api was refused a connection to a;touch x:443 (host not in network.allowedHosts)",
			"gemkit's sandbox refused this MCP server during the call: a connection to a;touch x:443: host not in network.allowedHosts."},
		// A name the server looked up is its own choice: a terminal's
		// escape sequence in it is shown escaped, and offers no command.
		{netproxy.Denial{Method: netproxy.LookupMethod, Host: "\x1b]0;owned\x07x.example", Reason: netproxy.LookupNotAllowed},
			`extension weather's MCP server api was refused the host \x1b]0;owned\x07x.example (name looked up without the sandbox's proxy; host not allowed)`,
			`gemkit's sandbox refused this MCP server during the call: the host \x1b]0;owned\x07x.example: name looked up without the sandbox's proxy; host not allowed.`},
		{netproxy.Denial{Method: sandbox.DirectMethod, Host: "2001:db8::1", Port: 443, Reason: sandbox.DirectNotAllowed},
			"extension weather's MCP server api was refused a connection to [2001:db8::1]:443 (connection without the sandbox's proxy; host not allowed); to allow it: gemkit extensions sandbox weather --allow-host '[2001:db8::1]:443' (an allowed host is reached through the proxy named in HTTPS_PROXY and HTTP_PROXY, which the server's client must use)",
			"gemkit's sandbox refused this MCP server during the call: a connection to [2001:db8::1]:443 (without the sandbox's proxy). The person (not the model) can allow it with: gemkit extensions sandbox weather --allow-host '[2001:db8::1]:443'" + noProxyCaveat},
		// Allowed, and reached without the proxy all the same: no command,
		// and the person is told it is the server's to change.
		{netproxy.Denial{Method: sandbox.DirectMethod, Host: "127.0.0.1", Port: 8080, Reason: sandbox.DirectNoProxy},
			"extension weather's MCP server api was refused a connection to 127.0.0.1:8080 (connection to an allowed host without the sandbox's proxy, which alone reaches it (HTTPS_PROXY, HTTP_PROXY; Node's fetch uses it from Node 22.21 with NODE_USE_ENV_PROXY=1)); no widening reaches it: the server must use a client that follows HTTPS_PROXY, which is for the extension's author (or a newer Node) to change",
			"gemkit's sandbox refused this MCP server during the call: a connection to 127.0.0.1:8080: connection to an allowed host without the sandbox's proxy, which alone reaches it (HTTPS_PROXY, HTTP_PROXY; Node's fetch uses it from Node 22.21 with NODE_USE_ENV_PROXY=1)."},
		// An allowed host the network did not reach: the network's, said
		// so, with no command (the tour's finding).
		{netproxy.Denial{Method: "CONNECT", Host: "api.example.com", Port: 443, Reason: netproxy.Unreachable + ": its name does not resolve (no such host)"},
			"extension weather's MCP server api could not reach api.example.com:443, which you allowed: its name does not resolve (no such host); that is the network's doing, not the sandbox's (no widening changes it): check the host's name, and that this machine reaches it",
			"This MCP server could not reach, during the call, what the person allowed it: api.example.com:443 (its name does not resolve (no such host)). That is the network, not gemkit's sandbox."},
		{netproxy.Denial{Method: sandbox.UnixMethod, Reason: sandbox.UnixNotAllowed},
			"extension weather's MCP server api was refused a Unix socket (Unix-domain sockets not allowed); to allow it: gemkit extensions sandbox weather --allow-unix-sockets",
			"gemkit's sandbox refused this MCP server during the call: a Unix socket. The person (not the model) can allow it with: gemkit extensions sandbox weather --allow-unix-sockets"},
		{netproxy.Denial{Method: "GET", Host: "127.0.0.1:3128", Reason: "not a proxy request (want CONNECT or an absolute http:// URL)"},
			"extension weather's MCP server api was refused a connection to 127.0.0.1:3128 (not a proxy request (want CONNECT or an absolute http:// URL))",
			"gemkit's sandbox refused this MCP server during the call: a connection to 127.0.0.1:3128: not a proxy request (want CONNECT or an absolute http:// URL)."},
	} {
		r := refusal(sp, c.d, "")
		if got := r.String(); got != c.person {
			t.Errorf("person:\n got %s\nwant %s", got, c.person)
		}
		if got := forModel([]Refusal{r}); got != c.model {
			t.Errorf("model:\n got %s\nwant %s", got, c.model)
		}
	}
}

// TestRefusedSince: only what the proxy counted during the call is said,
// new refusals and repeats alike.
func TestRefusedSince(t *testing.T) {
	sp := Spec{Extension: "e", Server: "s"}
	a := netproxy.Denial{Method: "GET", Host: "a", Port: 80, Reason: netproxy.NotAllowed, Count: 1}
	b := netproxy.Denial{Method: netproxy.LookupMethod, Host: "b", Reason: netproxy.LookupNotAllowed, Count: 1}
	a2 := a
	a2.Count = 2
	if got := refusedSince(sp, []netproxy.Denial{a}, []netproxy.Denial{a}, ""); len(got) != 0 {
		t.Errorf("nothing new: %v", got)
	}
	got := refusedSince(sp, []netproxy.Denial{a}, []netproxy.Denial{a2, b}, "")
	if len(got) != 2 || got[0].Host != "a:80" || got[1].Host != "b" || !got[1].Lookup {
		t.Errorf("repeat and new: %+v", got)
	}
}

// TestWithLine: the line is the result's last text; a result that is not
// MCP's is left as it is.
func TestWithLine(t *testing.T) {
	out := withLine(json.RawMessage(`{"content":[{"type":"text","text":"x"}],"isError":true}`), "refused")
	var res struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Content) != 2 || res.Content[1].Text != "refused" || !res.IsError {
		t.Errorf("%s %v", out, err)
	}
	if got := string(withLine(json.RawMessage(`[1]`), "refused")); got != `[1]` {
		t.Errorf("%s", got)
	}
}

// TestKeepRefusals: the file is 0600 and keeps the last MaxRefusals.
func TestKeepRefusals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "share", "gemkit", "refusals.json")
	m := NewManager(Config{Refusals: path, Environ: []string{}})
	for i := range MaxRefusals + 5 {
		if err := m.keepRefusal(Refusal{At: time.Unix(int64(i), 0), Extension: "e", Server: "s", Host: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%v %v", fi, err)
	}
	rs, err := ReadRefusals(path)
	if err != nil || len(rs) != MaxRefusals || rs[0].At.Unix() != 5 {
		t.Errorf("%d kept, first %v, %v", len(rs), rs[0].At, err)
	}
}

// TestArgPaths: the absolute paths among a call's string arguments,
// nested ones included, at most maxArgPaths.
func TestArgPaths(t *testing.T) {
	var a any
	json.Unmarshal([]byte(`{"path":"/ws/a/../b.txt","content":"x","edits":[{"file":"/ws/c"}],"rel":"d.txt","n":3}`), &a)
	got := argPaths(a, nil)
	if len(got) != 2 || !slices.Contains(got, "/ws/b.txt") || !slices.Contains(got, "/ws/c") {
		t.Errorf("%v", got)
	}
	many := make([]any, 20)
	for i := range many {
		many[i] = "/p"
	}
	if got := argPaths(many, nil); len(got) != maxArgPaths {
		t.Errorf("%d paths", len(got))
	}
}

// TestRefusedWrites: a refused write is told from the call's arguments,
// or, for a path of the server's own code (the extension's folder, the
// tree its package was pinned in), from the error's text
// (a server that keeps its state beside its code); a path elsewhere in
// the text alone, a success and an error of other words are not.
func TestRefusedWrites(t *testing.T) {
	ws, dir, data := "/home/me/proj", "/home/me/.gemini/extensions/notes", "/home/me/.local/share/gemkit/extension-data/notes"
	s := &server{m: NewManager(Config{Workspace: ws, Environ: []string{}}), spec: Spec{Extension: "notes", Server: "memory", Dir: dir}}
	result := func(isError bool, texts ...string) json.RawMessage {
		var content []map[string]string
		for _, tx := range texts {
			content = append(content, map[string]string{"type": "text", "text": tx})
		}
		b, _ := json.Marshal(map[string]any{"content": content, "isError": isError})
		return b
	}
	memory := "EROFS: read-only file system, open '" + dir + "/node_modules/server-memory/dist/memory.jsonl.123.tmp'"
	tree := "/home/me/.local/share/gemkit/packages/notes/memory@2026.8.31-1"
	for _, c := range []struct {
		name   string
		linked bool
		pinned bool // a package runner's server, run from its pinned tree
		args   string
		res    json.RawMessage
		person string
		model  string
	}{
		{name: "workspace path in the arguments", args: `{"path":"` + ws + `/a.txt"}`, res: result(true, "EROFS: read-only file system, open '"+ws+"/a.txt'"),
			person: "extension notes's MCP server memory was refused a write to " + ws + "/a.txt (the workspace is read-only to its servers; the call failed with EROFS, read-only file system, naming this path); to allow it: gemkit extensions sandbox notes --allow-write workspace",
			model:  "gemkit's sandbox refused this MCP server during the call: a write to " + ws + "/a.txt. The person (not the model) can allow it with: gemkit extensions sandbox notes --allow-write workspace"},
		{name: "extension folder in the error only", args: `{"entities":[]}`, res: result(true, memory),
			person: "extension notes's MCP server memory was refused a write to " + dir + "/node_modules/server-memory/dist/memory.jsonl.123.tmp (its extension's folder, read-only to its servers whatever is allowed; the call failed with EROFS, read-only file system, naming this path in its error; a server writes what it keeps in its data folder, its HOME (" + data + "), when the manifest's entry points it there (an env value with $HOME))",
			model:  "gemkit's sandbox refused this MCP server during the call: a write to " + dir + "/node_modules/server-memory/dist/memory.jsonl.123.tmp: its extension's folder, read-only to its servers whatever is allowed; the call failed with EROFS, read-only file system, naming this path in its error; a server writes what it keeps in its data folder, its HOME (" + data + "), when the manifest's entry points it there (an env value with $HOME)."},
		{name: "Python's words", args: `{}`, res: result(true, "[Errno 30] Read-only file system: '"+dir+"/state.db'"),
			person: "extension notes's MCP server memory was refused a write to " + dir + "/state.db (its extension's folder"},
		// A shell server's error starts with its script's path, in the
		// extension's folder, which it did not try to write.
		{name: "a shell's words", args: `{}`, res: result(true, dir+"/server.sh: line 3: "+dir+"/state.json: Read-only file system"),
			person: "extension notes's MCP server memory was refused a write to " + dir + "/state.json (its extension's folder"},
		{name: "another path in the error only", args: `{}`, res: result(true, "EACCES: permission denied, open '/etc/passwd'")},
		// EACCES answers a read Landlock refuses too: server-filesystem's
		// read of a hidden path fails listing a folder it may not read.
		// Only a path the error names and the server may read is taken
		// as a refused write.
		{name: "EACCES of a read", args: `{"path":"/home/me/.ssh/id_ed25519"}`, res: result(true, "EACCES: permission denied, scandir '/'")},
		{name: "EACCES naming a path it may not read", args: `{"path":"/home/me/.bashrc"}`, res: result(true, "EACCES: permission denied, open '/home/me/.bashrc'")},
		{name: "EACCES naming another path", args: `{"path":"` + ws + `/.git/config"}`, res: result(true, "EACCES: permission denied, scandir '/home/me'")},
		{name: "EACCES naming a workspace path", args: `{"path":"` + ws + `/.git/config"}`, res: result(true, "EACCES: permission denied, open '"+ws+"/.git/config'"),
			person: "extension notes's MCP server memory was refused a write to " + ws + "/.git/config (the workspace is read-only to its servers; the call failed with EACCES, permission denied, naming this path); to allow it: gemkit extensions sandbox notes --allow-write workspace"},
		{name: "a success naming the folder", args: `{}`, res: result(false, "EROFS "+dir+"/x")},
		{name: "other words", args: `{}`, res: result(true, "ENOENT: no such file, open '"+dir+"/x'")},
		{name: "the data folder", args: `{}`, res: result(true, "EROFS: read-only file system, open '"+data+"/x'")},
		// A linked extension's folder inside the workspace: its own
		// folder's words, and no command, which would not allow it.
		{name: "extension folder in the workspace", linked: true, args: `{"path":"` + ws + `/tools/ext/state.json"}`, res: result(true, "EROFS: read-only file system"),
			person: "extension notes's MCP server memory was refused a write to " + ws + "/tools/ext/state.json (its extension's folder, read-only to its servers whatever is allowed; the call failed with EROFS, read-only file system, naming this path; a server writes"},
		// server-memory started with npx keeps its file beside its
		// script in the pinned tree (a tour's finding: told with no
		// advice before).
		{name: "pinned tree in the error only", pinned: true, args: `{"entities":[]}`, res: result(true, "EROFS: read-only file system, open '"+tree+"/node_modules/server-memory/dist/memory.jsonl.9.tmp'"),
			person: "extension notes's MCP server memory was refused a write to " + tree + "/node_modules/server-memory/dist/memory.jsonl.9.tmp (the tree gemkit pinned its package in, read-only to its servers whatever is allowed; the call failed with EROFS, read-only file system, naming this path in its error; a server writes what it keeps in its data folder, its HOME (" + data + "), when the manifest's entry points it there (an env value with $HOME))"},
		{name: "pinned tree in the arguments", pinned: true, args: `{"path":"` + tree + `/x.json"}`, res: result(true, "EROFS: read-only file system"),
			person: "extension notes's MCP server memory was refused a write to " + tree + "/x.json (the tree gemkit pinned its package in, read-only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := s
			if c.pinned {
				s = &server{m: s.m, spec: Spec{Extension: "notes", Server: "memory", Dir: dir, Tree: tree}}
			}
			if c.linked {
				s = &server{m: s.m, spec: Spec{Extension: "notes", Server: "memory", Dir: ws + "/tools/ext"}}
			}
			got := s.refusedWrites(json.RawMessage(c.args), c.res, data, "/tmp/x", nil)
			if c.person == "" {
				if len(got) != 0 {
					t.Fatalf("refusals %+v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d refusals, want 1: %+v", len(got), got)
			}
			if p := got[0].String(); !strings.HasPrefix(p, c.person) {
				t.Errorf("person:\n got %s\nwant %s", p, c.person)
			}
			if m := forModel(got); c.model != "" && m != c.model {
				t.Errorf("model:\n got %s\nwant %s", m, c.model)
			}
		})
	}
}

// TestHookRefusalsOncePerHook: a hook runs at every event (each tool call
// of a session), each run a start of its own, and one that is refused
// the same write at each run kept one entry per run: doctor printed the
// same note once per tool call, describe's last three reports were the
// hook's alone, and past MaxRefusals runs the servers' refusals were
// gone from the file (seen in the tour: four tool calls, four notes).
// A hook's refusal now keeps one entry per hook and thing refused, in
// its latest run, counting every run's; a server's stay one per start.
func TestHookRefusalsOncePerHook(t *testing.T) {
	at := func(i int) time.Time { return time.Unix(int64(1000+i), 0) }
	hook := func(i int, path string) Refusal {
		return Refusal{At: at(i), Start: at(i), Extension: "srv", Hook: "guard", Path: path, Reason: "the workspace is read-only to its hooks"}
	}
	server := func(i int, host string) Refusal {
		return Refusal{At: at(i), Start: at(i), Extension: "srv", Server: "srv", Host: host, Reason: "host not allowed", Count: 1}
	}
	type want struct {
		what  string // the report's head: "hook guard" or "server srv"
		items int
		count int // the first refusal's count
	}
	cases := []struct {
		name string
		add  func(keep func(...Refusal))
		want []want
	}{
		{"one write, every run", func(keep func(...Refusal)) {
			keep(server(0, "api.example.com:443"))
			for i := 1; i <= MaxRefusals+10; i++ {
				keep(hook(i, "/ws/hook-wrote.txt"))
			}
		}, []want{{"server srv", 1, 1}, {"hook guard", 1, MaxRefusals + 10}}},
		{"two writes, then one", func(keep func(...Refusal)) {
			keep(hook(1, "/ws/a"), hook(1, "/ws/b"))
			keep(hook(2, "/ws/a"))
		}, []want{{"hook guard", 1, 1}, {"hook guard", 1, 2}}},
		{"a server's starts stay apart", func(keep func(...Refusal)) {
			keep(server(1, "api.example.com:443"))
			keep(server(2, "api.example.com:443"))
		}, []want{{"server srv", 1, 1}, {"server srv", 1, 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "refusals.json")
			c.add(func(rs ...Refusal) {
				if err := KeepRefusals(path, rs...); err != nil {
					t.Fatal(err)
				}
			})
			rs, err := ReadRefusals(path)
			if err != nil {
				t.Fatal(err)
			}
			rps := Reports(rs)
			if len(rps) != len(c.want) {
				t.Fatalf("%d reports, want %d", len(rps), len(c.want))
			}
			for i, w := range c.want {
				rp := rps[i]
				what := "server " + rp.Server
				if rp.Hook != "" {
					what = "hook " + rp.Hook
				}
				if what != w.what || len(rp.Refusals) != w.items || max(rp.Refusals[0].Count, 1) != w.count {
					t.Errorf("report %d: %s, %d refusals, the first counted %d; want %+v (%v)", i, what, len(rp.Refusals), rp.Refusals[0].Count, w, rp.Lines())
				}
			}
		})
	}
}
