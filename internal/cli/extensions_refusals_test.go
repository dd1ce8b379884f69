package cli

import (
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
)

// TestStillRefused: a refusal stays shown until the widening its command
// names is given: a host by --allow-host, a write by --allow-write
// workspace, a Unix socket by --allow-unix-sockets; one no widening
// allows stays.
func TestStillRefused(t *testing.T) {
	host := extmcp.Refusal{Host: "api.example.com:443", Allow: "gemkit extensions sandbox e --allow-host api.example.com:443"}
	write := extmcp.Refusal{Path: "/ws/a.txt", Allow: "gemkit extensions sandbox e --allow-write workspace"}
	sock := extmcp.Refusal{UnixSocket: true, Allow: "gemkit extensions sandbox e --allow-unix-sockets"}
	own := extmcp.Refusal{Host: "127.0.0.1:7777"}
	all := []extmcp.Refusal{host, write, sock, own}
	for _, c := range []struct {
		name string
		w    extension.Widening
		want int
	}{
		{"none", extension.Widening{}, 4},
		{"host", extension.Widening{Hosts: []string{"api.example.com:443"}}, 3},
		{"write", extension.Widening{Write: extension.AccessWorkspace}, 3},
		{"unix sockets", extension.Widening{UnixSockets: true}, 3},
		{"all", extension.Widening{Hosts: []string{"api.example.com:443", "127.0.0.1:7777"}, Write: extension.AccessWorkspace, UnixSockets: true}, 1},
	} {
		if got := stillRefused(all, c.w, time.Time{}); len(got) != c.want {
			t.Errorf("%s: %d still refused, want %d: %+v", c.name, len(got), c.want, got)
		}
	}
	// A refusal no widening allows goes once the manifest changed after
	// it; one a widening allows stays until that widening is given.
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	folder := extmcp.Refusal{At: at, Path: "/ext/state.json"}
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
		if got := stillRefused([]extmcp.Refusal{folder, hostThen}, extension.Widening{}, c.changed); len(got) != c.want {
			t.Errorf("%s: %d still refused, want %d: %+v", c.name, len(got), c.want, got)
		}
	}
}
