package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/hookout"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// count is how many refusals the reports hold.
func count(rps []extmcp.Report) int {
	n := 0
	for _, rp := range rps {
		n += len(rp.Refusals)
	}
	return n
}

// TestStillRefused: a refusal stays shown until the widening its command
// names is given: a host by --allow-host (an entry that matches it), a
// write by --allow-write workspace, a Unix socket by
// --allow-unix-sockets, a metadata service by credentials of its kind;
// one no widening allows stays.
func TestStillRefused(t *testing.T) {
	host := extmcp.Refusal{Extension: "e", Server: "s", Host: "api.example.com:443", Allow: "gemkit extensions sandbox e --allow-host api.example.com:443"}
	lookup := extmcp.Refusal{Extension: "e", Server: "s", Host: "cdn.example.com", Lookup: true, Allow: "gemkit extensions sandbox e --allow-host cdn.example.com"}
	write := extmcp.Refusal{Extension: "e", Server: "s", Path: "/ws/a.txt", Allow: "gemkit extensions sandbox e --allow-write workspace"}
	sock := extmcp.Refusal{Extension: "e", Server: "s", UnixSocket: true, Allow: "gemkit extensions sandbox e --allow-unix-sockets"}
	meta := extmcp.Refusal{Extension: "e", Server: "s", Host: "metadata.google.internal", Lookup: true, Credentials: []string{"gcloud"}, Allow: "gemkit extensions sandbox e --allow-credentials gcloud"}
	own := extmcp.Refusal{Extension: "e", Server: "s", Host: "127.0.0.1:7777"}
	all := []extmcp.Refusal{host, lookup, write, sock, meta, own}
	for _, c := range []struct {
		name string
		w    extension.Widening
		want int
	}{
		{"none", extension.Widening{}, 6},
		{"host", extension.Widening{Hosts: []string{"api.example.com:443"}}, 5},
		{"bare name", extension.Widening{Hosts: []string{"api.example.com", "cdn.example.com"}}, 4},
		{"wildcard", extension.Widening{Hosts: []string{"*.example.com"}}, 4},
		{"other port", extension.Widening{Hosts: []string{"api.example.com:8443", "cdn.example.com:443"}}, 6},
		{"write", extension.Widening{Write: extension.AccessWorkspace}, 5},
		{"unix sockets", extension.Widening{UnixSockets: true}, 5},
		{"credentials", extension.Widening{Credentials: []string{"gcloud"}}, 5},
		{"all", extension.Widening{Hosts: []string{"api.example.com:443", "cdn.example.com", "127.0.0.1:7777"}, Write: extension.AccessWorkspace, UnixSockets: true, Credentials: []string{"gcloud"}}, 1},
	} {
		if got := stillRefused(all, c.w, nil, time.Time{}); count(got) != c.want {
			t.Errorf("%s: %d still refused, want %d: %+v", c.name, count(got), c.want, got)
		}
	}
	// Refusals belong to the extension as it was: every one from before
	// its last consent or change goes, whether a widening allows it or
	// not.
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	folder := extmcp.Refusal{Extension: "e", Server: "s", At: at, Path: "/ext/state.json"}
	hostThen := host
	hostThen.At = at
	for _, c := range []struct {
		name    string
		changed time.Time
		want    int
	}{
		{"unchanged", time.Time{}, 2},
		{"changed before", at.Add(-time.Hour), 2},
		{"changed after", at.Add(time.Hour), 0},
	} {
		if got := stillRefused([]extmcp.Refusal{folder, hostThen}, extension.Widening{}, nil, c.changed); count(got) != c.want {
			t.Errorf("%s: %d still refused, want %d: %+v", c.name, count(got), c.want, got)
		}
	}
}

// TestRefusalFindings: doctor says one start's refusals as one finding,
// a line per host, and one command for what the server likely needs.
func TestRefusalFindings(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rs := []extmcp.Refusal{
		{Extension: "e", Server: "s", Start: start, At: start.Add(time.Second), Host: "registry.npmjs.org:443", Reason: "host not in network.allowedHosts", Background: "update check", Allow: "gemkit extensions sandbox e --allow-host registry.npmjs.org:443"},
		{Extension: "e", Server: "s", Start: start, At: start.Add(2 * time.Second), Host: "api.example.com:443", Reason: "host not in network.allowedHosts", Needed: "named in the call's arguments", Allow: "gemkit extensions sandbox e --allow-host api.example.com:443"},
	}
	fs := refusalFindings("e", stillRefused(rs, extension.Widening{}, nil, time.Time{}))
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

// TestStaleRefusalsGone: refusals belong to the extension as it is.
// After uninstall and a new link whose server asks for nothing, doctor
// and describe no longer say the old version's refusal (the file lost
// it at the uninstall, another extension's kept); a new consent, or a
// changed manifest (an install by Gemini CLI, which gemkit does not
// see), leaves out every refusal from before.
func TestStaleRefusalsGone(t *testing.T) {
	e, src, path, keep := switchedSrvExt(t, "link")
	// What the old version's server was refused, as gemkit mcp keeps
	// it, and another extension's; both after the consent to it.
	agreed := time.Now().Add(-time.Hour)
	setConsentTime(t, e.home, "srv-ext", agreed)
	manifest := filepath.Join(src, "gemini-extension.json")
	os.Chtimes(manifest, agreed, agreed)
	registry, other := registryRefusals(agreed.Add(30 * time.Minute))
	keep(registry, other)
	said := "the host registry.npmjs.org: name looked up without the sandbox's proxy; host not allowed"
	if out := e.mustRun("doctor"); !strings.Contains(out, "srv-ext: extension srv-ext's MCP server memory was refused") || !strings.Contains(out, said) {
		t.Fatalf("doctor does not tell of the refusal:\n%s", out)
	}

	// Uninstalled: the file keeps only the other extension's.
	e.mustRun("uninstall", "srv-ext")
	rs, err := extmcp.ReadRefusals(path)
	if err != nil || len(rs) != 1 || rs[0].Extension != "other-ext" {
		t.Fatalf("after uninstall the file keeps %+v, %v", rs, err)
	}
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "srv-ext")
	for _, args := range [][]string{{"doctor"}, {"describe", "srv-ext"}} {
		if out := e.mustRun(args...); strings.Contains(out, said) {
			t.Errorf("%v after a new link tells of the old refusal:\n%s", args, out)
		}
	}

	// Put back by a gemkit mcp that ran meanwhile: shown while the
	// extension is as it was, gone after a new consent; and after a
	// change of its manifest.
	for _, c := range []struct {
		name   string
		change func()
	}{
		{"a new consent", func() { e.mustRun("consent", "srv-ext", "--revoke"); e.mustRun("consent", "srv-ext", "--grant") }},
		{"a changed manifest", func() { os.Chtimes(manifest, time.Now(), time.Now()) }},
	} {
		setConsentTime(t, e.home, "srv-ext", agreed)
		os.Chtimes(manifest, agreed, agreed)
		keep(registry)
		if out := e.mustRun("doctor"); !strings.Contains(out, said) {
			t.Fatalf("%s: doctor does not tell of the refusal before:\n%s", c.name, out)
		}
		c.change()
		if out := e.mustRun("doctor"); strings.Contains(out, said) {
			t.Errorf("after %s doctor tells of the refusal from before:\n%s", c.name, out)
		}
	}
}

// TestUpdateForgetsRefusals: an update that brings a new version drops
// what the sandbox refused the old one's servers from the file gemkit
// mcp keeps them in, and keeps another extension's; an update that
// finds nothing new keeps them.
func TestUpdateForgetsRefusals(t *testing.T) {
	e, src, path, keep := switchedSrvExt(t, "install")
	keep(registryRefusals(time.Now()))
	extensions := func() []string {
		t.Helper()
		rs, err := extmcp.ReadRefusals(path)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rs {
			names = append(names, r.Extension)
		}
		return names
	}

	if out := e.mustRun("update", "srv-ext"); !strings.Contains(out, "up to date") {
		t.Fatalf("update with nothing new: %q", out)
	}
	if got := extensions(); !slices.Equal(got, []string{"srv-ext", "other-ext"}) {
		t.Errorf("an update that found nothing new left the refusals of %v", got)
	}
	manifest := filepath.Join(src, "gemini-extension.json")
	data, _ := os.ReadFile(manifest)
	os.WriteFile(manifest, bytes.Replace(data, []byte(`"version": "1.0.0"`), []byte(`"version": "1.1.0"`), 1), 0o644)
	if out := e.mustRun("update", "srv-ext", "--consent"); !strings.Contains(out, "1.0.0 → 1.1.0") {
		t.Fatalf("update to 1.1.0: %q", out)
	}
	if got := extensions(); !slices.Equal(got, []string{"other-ext"}) {
		t.Errorf("after the update the file keeps the refusals of %v, want other-ext's alone", got)
	}
}

// switchedSrvExt is srv-ext's source, added with `gemkit extensions
// how` (link or install) and consent, and switched, in a new env whose
// HOME is where gemkit mcp keeps the refusals, in the file path; keep
// writes rs there as gemkit mcp keeps them.
func switchedSrvExt(t *testing.T, how string) (e *env, src, path string, keep func(rs ...extmcp.Refusal)) {
	t.Helper()
	e = newEnv(t)
	t.Setenv("HOME", e.home)
	src = srvExt(t)
	e.mustRun(how, src, "--consent")
	e.mustRun("sandbox", "srv-ext")
	path, err := extmcp.RefusalsPath(map[string]string{"HOME": e.home})
	if err != nil {
		t.Fatal(err)
	}
	return e, src, path, func(rs ...extmcp.Refusal) {
		t.Helper()
		b, _ := json.Marshal(rs)
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// registryRefusals are a refusal of the npm registry to srv-ext's
// server in its run started at start, and the same of other-ext's.
func registryRefusals(start time.Time) (mine, other extmcp.Refusal) {
	mine = extmcp.Refusal{Extension: "srv-ext", Server: "memory", Start: start, At: start, Host: "registry.npmjs.org", Lookup: true,
		Reason: "name looked up without the sandbox's proxy; host not allowed", Allow: "gemkit extensions sandbox srv-ext --allow-host registry.npmjs.org"}
	other = mine
	other.Extension, other.Allow = "other-ext", "gemkit extensions sandbox other-ext --allow-host registry.npmjs.org"
	return mine, other
}

// setConsentTime sets when the consent to name was given, in its record.
func setConsentTime(t *testing.T, home, name string, at time.Time) {
	t.Helper()
	p := filepath.Join(home, ".gemini", "gemkit", "consent.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var recs map[string]any
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	recs["extensions"].(map[string]any)[name].(map[string]any)["grantedAt"] = at.UTC().Format(time.RFC3339)
	b, _ = json.Marshal(recs)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestKeepHookRefusals is the newcomer tour's hook that writes into the
// workspace, read-only to it: what doctor lists of a hook's run holds a
// write the watch of its writes saw as a write of that path, in a
// hook's words and with the command that allows it, and once when its
// stderr names it too; never "a connection to :" (the watch's denial
// taken for a connection without its host), nor the shell that printed
// the error ("/usr/bin/bash: line 1: ...") as a path it wrote.
func TestKeepHookRefusals(t *testing.T) {
	const ws, dir = "/tmp/tour/ws", "/home/me/.gemini/extensions/hk"
	allow := "gemkit extensions sandbox hk --hook writer"
	write := func(p, why string) netproxy.Denial {
		return netproxy.Denial{Method: sandbox.WriteMethod, Path: p, Reason: why, Count: 1}
	}
	bash := "/usr/bin/bash: line 1: " + ws + "/hook-out.txt: Read-only file system\n"
	for _, c := range []struct {
		name    string
		denied  []netproxy.Denial
		stderr  string
		want    []string // the report's items
		allow   string
		dropped []hookout.Drop
	}{
		{"the tour's hook", []netproxy.Denial{write(ws+"/hook-out.txt", sandbox.WriteWorkspace)}, bash,
			[]string{"a write to " + ws + "/hook-out.txt: the workspace is read-only to its hooks"}, allow + " --allow-write workspace", nil},
		{"its stderr alone", nil, bash,
			[]string{"a write to " + ws + "/hook-out.txt: the workspace is read-only to its hooks; its stderr said a write there was refused"}, allow + " --allow-write workspace", nil},
		{"dash and touch", nil, "sh: 1: cannot create /etc/x: Read-only file system\n/usr/bin/touch: cannot touch '" + dir + "/state': Read-only file system\n",
			[]string{"a write to /etc/x: outside what its hooks may write, which is nothing but their temporary folder (and the workspace when allowed); its stderr said a write there was refused",
				"a write to " + dir + "/state: its extension's folder, read-only to its hooks whatever is allowed; its stderr said a write there was refused"}, "", nil},
		{"its extension's folder", []netproxy.Denial{write(dir+"/state", sandbox.WriteExtension)}, "",
			[]string{"a write to " + dir + "/state: its extension's folder, read-only to its hooks whatever is allowed"}, "", nil},
		{"a protected path", []netproxy.Denial{write(ws+"/.git/config", sandbox.WriteProtected)}, "",
			[]string{"a write to " + ws + "/.git/config: a protected path of the workspace, read-only whatever is allowed: .git, hooks, .env, editors' and agents' settings and instructions (GEMINI.md, CLAUDE.md, AGENTS.md, .mcp.json)"}, "", nil},
		{"outside", []netproxy.Denial{write("/etc/x", sandbox.WriteOutside)}, "",
			[]string{"a write to /etc/x: outside what its hooks may write, which is nothing but their temporary folder (and the workspace when allowed)"}, "", nil},
		{"a write naming no path", []netproxy.Denial{write("", sandbox.WriteWorkspace)}, "", nil, "", nil},
		{"a host", []netproxy.Denial{{Method: "CONNECT", Host: "api.example.com", Port: 443, Reason: netproxy.NotAllowed, Count: 1}}, "",
			[]string{"a connection to api.example.com:443: " + netproxy.NotAllowed}, allow + " --allow-host api.example.com:443", nil},
		// The hook's own words are the attacker's: a path holding a
		// terminal's escape is shown escaped, never sent to the terminal.
		{"an escape in its stderr", nil, "/usr/bin/bash: line 1: " + ws + "/x\x1b[2J: Read-only file system\n",
			[]string{"a write to " + ws + "/x\\x1b[2J: the workspace is read-only to its hooks; its stderr said a write there was refused"}, allow + " --allow-write workspace", nil},
		// Told as a server's is: no host to allow.
		{"a listen", []netproxy.Denial{{Method: sandbox.ListenMethod, Host: "127.0.0.1", Port: 5345, Reason: sandbox.ListenRefused, Count: 1}}, "",
			[]string{"listening on 127.0.0.1:5345: no widening helps: the sandbox's network is its own, so a port listened on there would be reached by none of your programs, your browser's sign-in callback (an OAuth redirect to 127.0.0.1) included; what signs in so needs a token it takes from a setting or a variable (gemkit extensions sandbox hk --hook writer --allow-env NAME), or to run outside gemkit's sandbox (gemkit extensions sandbox hk --off gives it back to Gemini CLI, unconfined)"}, "", nil},
		// What gemkit left out of its answer: no widening allows it.
		{"its answer", nil, "", []string{"passing its answer's hookSpecificOutput.tool_input on to Gemini CLI: a rewrite", "passing all of its answer's reason on to Gemini CLI: 12,000 characters",
			"passing its answer on to Gemini CLI: not UTF-8"}, "",
			[]hookout.Drop{{Field: "hookSpecificOutput.tool_input", Why: "a rewrite"}, {Field: "reason", Why: "12,000 characters", Cut: true}, {Why: "not UTF-8"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			extmcp.KeepHookRefusals(extmcp.HookRun{Extension: "hk", Hook: "writer", Workspace: ws, Dir: dir, Start: time.Now(), Denied: c.denied, Stderr: c.stderr, Dropped: c.dropped})
			path, err := extmcp.RefusalsPath(map[string]string{"HOME": home})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			var kept []extmcp.Refusal
			if len(b) > 0 {
				if err := json.Unmarshal(b, &kept); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range kept {
				if r.Host == "" && r.Path == "" && !r.UnixSocket && r.Answer == "" {
					t.Errorf("kept a refusal naming nothing: %+v", r)
				}
			}
			rps := stillRefused(kept, extension.Widening{}, nil, time.Time{})
			var items []string
			var fix string
			for _, rp := range rps {
				items = append(items, rp.Lines()[1:]...)
				fix = rp.Allow()
			}
			if !slices.Equal(items, c.want) || fix != c.allow {
				t.Errorf("doctor's items:\n %q\nwant\n %q\nfix %q, want %q", items, c.want, fix, c.allow)
			}
		})
	}
}

// TestRefusalNamingNothing: a refusal that names no host, path or Unix
// socket, as a gemkit before the fix kept for a hook's refused write, is
// not shown, nor kept again.
func TestRefusalNamingNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refusals.json")
	start := time.Now()
	empty := extmcp.Refusal{Extension: "hk", Hook: "writer", Start: start, At: start, Reason: sandbox.WriteWorkspace, Count: 1}
	b, _ := json.Marshal([]extmcp.Refusal{empty})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if rs, err := extmcp.ReadRefusals(path); err != nil || len(rs) != 0 {
		t.Errorf("read %+v, %v; want none", rs, err)
	}
	if err := extmcp.KeepRefusals(path, empty); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "writer") {
		t.Errorf("kept a refusal naming nothing:\n%s", b)
	}
}
