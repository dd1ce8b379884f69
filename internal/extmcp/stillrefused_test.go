package extmcp

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/hookout"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// count is how many refusals the reports hold.
func count(rps []Report) int {
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
	host := Refusal{Extension: "e", Server: "s", Host: "api.example.com:443", Allow: "gemkit extensions sandbox e --allow-host api.example.com:443"}
	lookup := Refusal{Extension: "e", Server: "s", Host: "cdn.example.com", Lookup: true, Allow: "gemkit extensions sandbox e --allow-host cdn.example.com"}
	write := Refusal{Extension: "e", Server: "s", Path: "/ws/a.txt", Allow: "gemkit extensions sandbox e --allow-write workspace"}
	sock := Refusal{Extension: "e", Server: "s", UnixSocket: true, Allow: "gemkit extensions sandbox e --allow-unix-sockets"}
	meta := Refusal{Extension: "e", Server: "s", Host: "metadata.google.internal", Lookup: true, Credentials: []string{"gcloud"}, Allow: "gemkit extensions sandbox e --allow-credentials gcloud"}
	own := Refusal{Extension: "e", Server: "s", Host: "127.0.0.1:7777"}
	all := []Refusal{host, lookup, write, sock, meta, own}
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
		if got := StillRefused(all, c.w, nil, time.Time{}); count(got) != c.want {
			t.Errorf("%s: %d still refused, want %d: %+v", c.name, count(got), c.want, got)
		}
	}
	// Refusals belong to the extension as it was: every one from before
	// its last consent or change goes, whether a widening allows it or
	// not.
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	folder := Refusal{Extension: "e", Server: "s", At: at, Path: "/ext/state.json"}
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
		if got := StillRefused([]Refusal{folder, hostThen}, extension.Widening{}, nil, c.changed); count(got) != c.want {
			t.Errorf("%s: %d still refused, want %d: %+v", c.name, count(got), c.want, got)
		}
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
			KeepHookRefusals(HookRun{Extension: "hk", Hook: "writer", Workspace: ws, Dir: dir, Start: time.Now(), Denied: c.denied, Stderr: c.stderr, Dropped: c.dropped})
			path, err := RefusalsPath(map[string]string{"HOME": home})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			var kept []Refusal
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
			rps := StillRefused(kept, extension.Widening{}, nil, time.Time{})
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
