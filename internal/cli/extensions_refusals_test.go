package cli

import (
	"testing"

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
		if got := stillRefused(all, c.w); len(got) != c.want {
			t.Errorf("%s: %d still refused, want %d: %+v", c.name, len(got), c.want, got)
		}
	}
}
