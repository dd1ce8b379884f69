package term

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

func TestStatusText(t *testing.T) {
	at := time.Unix(0, 0)
	for _, tc := range []struct {
		name    string
		clients []companion.Client
		queue   []string
		want    string
	}{
		{"nothing", nil, nil, "Status: no CLI connected; no diff waiting."},
		{
			"one of each",
			[]companion.Client{{Name: "gemini", Version: "0.61.0", Transport: companion.TransportHTTP, Since: at}},
			[]string{"/ws/a.go"},
			"Status: 1 CLI connected: gemini 0.61.0 (HTTP); 1 diff waiting: 1. /ws/a.go.",
		},
		{
			"several, in order",
			[]companion.Client{
				{Name: "gemini", Version: "1", Transport: companion.TransportStream},
				{Name: "claude-code", Version: "2", Transport: companion.TransportClaude, Agent: companion.AgentClaude, AgentVersion: "2"},
				{Transport: companion.TransportHTTP},
			},
			[]string{"/ws/b.go", "/ws/a.go"},
			"Status: 3 CLIs connected: gemini 1 (WebSocket), Claude Code 2, an unnamed client (HTTP); 2 diffs waiting: 1. /ws/b.go, 2. /ws/a.go.",
		},
		{
			// The agents as the companion recognised them (the same
			// clientInfo name for Gemini CLI and Qwen Code), two Gemini
			// CLIs told apart by process and folder, one of them
			// through the stdio bridge.
			"two Gemini CLIs and Qwen Code",
			[]companion.Client{
				{Name: "streamable-http-client", Version: "0.61.0", Agent: companion.AgentGemini, AgentVersion: "0.61.0", Transport: companion.TransportHTTP, PID: 41, Dir: "/srv/a"},
				{Name: "stdio-client", Version: "0.61.0", Agent: companion.AgentGemini, AgentVersion: "0.61.0", Transport: companion.TransportHTTP, PID: 42, Dir: "/srv/b", Bridged: true},
				{Name: "claude-code", Version: "2.1.330", Agent: companion.AgentClaude, AgentVersion: "2.1.330", Transport: companion.TransportClaude, PID: 43, Dir: "/srv/a"},
				{Name: "streamable-http-client", Version: "1.0.0", Agent: companion.AgentQwen, AgentVersion: "0.24.4", Transport: companion.TransportHTTP, PID: 44, Dir: "/srv/a"},
				{Name: "streamable-http-client", Version: "1.0.0", Agent: companion.AgentQwen, Transport: companion.TransportHTTP},
			},
			nil,
			"Status: 5 CLIs connected: Gemini CLI 0.61.0 (pid 41, in /srv/a), Gemini CLI 0.61.0 (pid 42, in /srv/b, through the stdio bridge), Claude Code 2.1.330 (pid 43, in /srv/a), Qwen Code 0.24.4 (pid 44, in /srv/a), Qwen Code; no diff waiting.",
		},
		{
			// A client the companion does not recognise, through the
			// bridge: it spoke stdio to the bridge, which alone spoke
			// HTTP, so its transport is not named as HTTP.
			"an unrecognised client through the bridge",
			[]companion.Client{{Name: "gemkit", Version: "devel", Transport: companion.TransportHTTP, PID: 45, Dir: "/srv/a", Bridged: true}},
			nil,
			"Status: 1 CLI connected: gemkit devel (pid 45, in /srv/a, through the stdio bridge); no diff waiting.",
		},
	} {
		if got := StatusText(tc.clients, tc.queue); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// listing is a companion side that also says who is connected, as the
// companion's Server does.
type listing struct {
	recorder
	mu      sync.Mutex
	clients []companion.Client
}

func (l *listing) Clients() []companion.Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]companion.Client(nil), l.clients...)
}

func (l *listing) set(c ...companion.Client) {
	l.mu.Lock()
	l.clients = c
	l.mu.Unlock()
}

// TestStatusLine: the status line is printed when a CLI connects or
// disconnects and when the queue changes, lists the queue in order, and is
// not repeated while nothing it shows changed.
func TestStatusLine(t *testing.T) {
	dir := t.TempDir()
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &gemkittest.Output{}
	ev := &listing{}
	f := New(Options{In: pr, Out: out, Editor: "false", TempDir: t.TempDir(), Clients: ev.Clients})
	done := make(chan error, 1)
	go func() { done <- f.Run(context.Background(), ev) }()

	ev.set(companion.Client{Name: "gemini", Version: "1", Transport: companion.TransportHTTP})
	f.ClientsChanged()
	out.WaitFor(t, "the CLI", func(o string) bool {
		return strings.Contains(o, "Status: 1 CLI connected: gemini 1 (HTTP); no diff waiting.")
	})

	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	if err := f.OpenDiff(context.Background(), a, "A\n"); err != nil {
		t.Fatal(err)
	}
	out.WaitFor(t, "the first diff", func(o string) bool { return strings.Contains(o, "1 diff waiting: 1. "+a+".") })
	if err := f.OpenDiff(context.Background(), b, "B\n"); err != nil {
		t.Fatal(err)
	}
	out.WaitFor(t, "the queue", func(o string) bool { return strings.Contains(o, "2 diffs waiting: 1. "+a+", 2. "+b+".") })

	f.ClientsChanged() // nothing it shows changed: no new line
	ev.set()
	f.ClientsChanged()
	out.WaitFor(t, "the disconnection", func(o string) bool {
		return strings.Contains(o, "Status: no CLI connected; 2 diffs waiting")
	})
	if n := strings.Count(out.String(), "Status: 1 CLI connected: gemini 1 (HTTP); 2 diffs waiting"); n != 1 {
		t.Errorf("the same status line was printed %d times:\n%s", n, out.String())
	}

	if _, err := io.WriteString(pw, "r\n"); err != nil {
		t.Fatal(err)
	}
	out.WaitFor(t, "the queue after an answer", func(o string) bool { return strings.Contains(o, "1 diff waiting: 1. "+b+".") })
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
