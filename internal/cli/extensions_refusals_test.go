package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
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
		if got := stillRefused(all, c.w, time.Time{}); count(got) != c.want {
			t.Errorf("%s: %d still refused, want %d: %+v", c.name, count(got), c.want, got)
		}
	}
	// A refusal no widening allows goes once the manifest changed after
	// it; one a widening allows stays until that widening is given.
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
		{"changed after", at.Add(time.Hour), 1},
	} {
		if got := stillRefused([]extmcp.Refusal{folder, hostThen}, extension.Widening{}, c.changed); count(got) != c.want {
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
	fs := refusalFindings("e", stillRefused(rs, extension.Widening{}, time.Time{}))
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
