package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/mcpserver"
	"github.com/gemkit/gemkit/internal/mcpwire"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// The wire of `gemkit mcp` on stdio, as a client sees it, is written
// down as transcripts in testdata/wire/*.txtar, one case a file, each
// played against `gemkit mcp --code-intel=false` of a fresh fixture (the
// demo and gated extensions linked):
//
//	What the case shows, in prose.
//	-- args --
//	--extension-servers                more arguments of gemkit mcp, if any
//	-- send --
//	{"jsonrpc":"2.0","id":1,...}       lines written to its stdin, one message each
//	-- receive --
//	{"jsonrpc":"2.0","id":1,...}       what it wrote until it answered every
//	                                   request sent (notifications come too), or
//	                                   until it ended ("(the session ended)");
//	                                   a line that is no request is followed by
//	                                   one (a ping), whose answer shows that
//	                                   whatever the line caused came first; a
//	                                   request cancelled (notifications/cancelled)
//	                                   in the same section is not waited for
//	-- send-quiet --
//	...                                lines whose answers are read, not shown
//
// TestWireTranscripts plays them in memory, in every go test (-short
// too): the server gemkit mcp builds (memoryMCP), served by ServeStdio
// over pipes. A case whose name begins with "extserver-" also links an
// extension whose own server is the pinned server-everything, run in
// gemkit's sandbox: a real peer (node), so it is played without -short
// only, and then by TestWireTranscriptsBinary alone, through the
// command itself, which takes its --extension-servers. Volatile values
// are written as WORKSPACE, HOME and VERSION. A test fails when an
// answer differs; go test -update rewrites the receive sections from
// what gemkit mcp does now.
func TestWireTranscripts(t *testing.T) {
	golden.Transcripts(t, filepath.Join("testdata", "wire"), func(t *testing.T, a *golden.Archive) {
		if extServerCase(t) {
			t.Skip("plays server-everything (node), a real peer: TestWireTranscriptsBinary plays it without -short, through the built command")
		}
		f := fixtureWith(t, "")
		s, log := memoryMCP(t, f, strings.Fields(a.Get("args")))
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := s.ServeStdio(ctx, inR, outW); err != nil {
				fmt.Fprintf(log, "ServeStdio: %v\n", err)
			}
			outW.Close()
		}()
		t.Cleanup(func() {
			cancel()
			inW.Close()
			go io.Copy(io.Discard, outR)
			<-done
		})
		playWire(t, f, a, inW, outR, log)
	})
}

// TestWireTranscriptsBinary plays the same transcripts against the built
// gemkit binary, without -short (gemkittest.Gemkit). It checks what the
// in-memory run cannot: that the command builds the server memoryMCP
// builds (its flags, the store, runner, sandbox launcher and servers
// made from them in internal/cli/mcp.go), so that a change there that
// changes the wire fails here; the process's own stdin and stdout
// (pollable.go) and its sandbox children, started from the binary
// itself; and the extserver- cases, whose real peer runs without -short
// only.
func TestWireTranscriptsBinary(t *testing.T) {
	golden.Transcripts(t, filepath.Join("testdata", "wire"), func(t *testing.T, a *golden.Archive) {
		f := newFixture(t)
		if extServerCase(t) {
			copyServers(t, filepath.Join(f.root, "src", "realmcp"))
			f.link(t, "realmcp", everythingManifest, nil)
		}
		args := append([]string{"mcp", "--code-intel=false"}, strings.Fields(a.Get("args"))...)
		cmd := exec.Command(f.bin, args...)
		cmd.Dir, cmd.Env = f.ws, f.env()
		stderr := &gemkittest.Output{}
		cmd.Stderr = stderr
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		playWire(t, f, a, stdin, stdout, stderr)
	})
}

// extServerCase reports whether the case t plays links an extension
// whose own server is server-everything.
func extServerCase(t *testing.T) bool {
	return strings.HasPrefix(t.Name()[strings.LastIndex(t.Name(), "/")+1:], "extserver-")
}

// memoryMCP is the server `gemkit mcp --code-intel=false [args]` builds
// (internal/cli/mcp.go: runMCP and mcpFlags.server) for f's home and
// workspace, in this process, with f's environment for the tools and
// servers it starts; its log is the returned writer. It takes none of
// the command's arguments (only the extserver- cases give one).
// TestWireTranscriptsBinary holds it to the command's own.
func memoryMCP(t *testing.T, f *fixture, args []string) (*mcpserver.Server, *gemkittest.Output) {
	t.Helper()
	if len(args) > 0 {
		t.Fatalf("the in-memory gemkit mcp takes no arguments (%q): build what they change in memoryMCP", args)
	}
	ws, err := fsutil.Workspace(f.ws)
	if err != nil {
		t.Fatal(err)
	}
	env := f.env()
	out := &gemkittest.Output{}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st := extmcp.Policy{Store: extension.OpenStore(f.home).WithWorkspace(ws), Home: f.home}.WithWritable()
	launcher := &sandbox.Launcher{OnDeny: func(d netproxy.Denial) { log.Warn("sandbox denial", "denial", d.String()) }}
	t.Cleanup(func() { launcher.Close() })
	servers := extmcp.NewManager(extmcp.Config{Launcher: launcher, Workspace: ws, Timeout: toolrun.DefaultTimeout,
		Version: "test", Logger: log, Environ: env, ExtensionFolders: st.ExtensionFolders})
	t.Cleanup(servers.Close)
	runner := &toolrun.Runner{Launcher: launcher, Consent: st, Installed: st, Ask: mcpserver.Ask,
		AgreeCommand: extmcp.AgreeCommand, Protected: []string{filepath.Dir(st.Dir())}, Logger: log, Environ: env}
	src, err := disclosure.NameLimited(disclosure.StoreSource(st), disclosure.DefaultNameLimit)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpserver.New(mcpserver.Config{
		Source: src, Runner: runner, Budget: disclosure.DefaultBudget, Version: "test", Logger: log,
		Limits:  disclosure.Limits{Timeout: toolrun.DefaultTimeout, MaxOutput: toolrun.DefaultMaxOutput, MemoryBytes: sandbox.DefaultMemoryBytes},
		Servers: servers, ChooseServers: extmcp.Policy{Store: st, Home: f.home}.Choose(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, out
}

// wireRun is one transcript's gemkit mcp.
type wireRun struct {
	t     *testing.T
	f     *fixture
	stdin io.WriteCloser
	lines chan string // stdout, a line at a time; closed at its end
	ended bool
}

// playWire plays a against the gemkit mcp of f whose stdin and stdout
// are given; its log is shown when the case fails.
func playWire(t *testing.T, f *fixture, a *golden.Archive, stdin io.WriteCloser, stdout io.Reader, log fmt.Stringer) {
	w := &wireRun{t: t, f: f, stdin: stdin, lines: make(chan string, 64)}
	go func() {
		defer close(w.lines)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				w.lines <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				return
			}
		}
	}()
	a.Play(t, map[string]golden.Step{
		"args":       {},
		"send":       {Do: w.exchange, Shown: "receive"},
		"send-quiet": {Do: func(data string) string { w.exchange(data); return "" }},
	})
	if t.Failed() {
		t.Logf("gemkit mcp's stderr:\n%s", log.String())
	}
}

// idRE finds a message's id, to tell which requests are answered.
var idRE = regexp.MustCompile(`"id":("(?:[^"\\]|\\.)*"|-?[0-9.eE+-]+)`)

// exchange writes the lines of send and reads until each request among
// them (a line with an id and a method) has its answer, returning what
// came, normalised.
func (w *wireRun) exchange(send string) string {
	t := w.t
	want := map[string]bool{}
	var writeErr error
	for line := range strings.SplitSeq(strings.TrimSuffix(send, "\n"), "\n") {
		// What is not JSON, or is no request (members by their exact
		// names), expects no answer of its own.
		if m, err := mcpwire.Read([]byte(line)); err == nil && m.HasID() && m.HasMethod {
			want[canonID(m.ID)] = true
		} else if err == nil && m.Is("notifications/cancelled") {
			// A request cancelled is answered by nothing.
			if p, err := mcpwire.ReadParams(m.Params); err == nil {
				delete(want, canonID(p.RequestID))
			}
		}
		if w.ended || writeErr != nil {
			continue
		}
		// A line that ends the session may close gemkit mcp's stdin
		// before the next is written (sooner on a loaded machine):
		// the write then fails, and what was read says why, below.
		if _, err := io.WriteString(w.stdin, w.real(line)+"\n"); err != nil {
			writeErr = fmt.Errorf("writing %s: %w", line, err)
		}
	}
	var out strings.Builder
	for len(want) > 0 {
		select {
		case line, ok := <-w.lines:
			if !ok {
				w.ended = true
				out.WriteString("(the session ended)\n")
				return out.String()
			}
			out.WriteString(w.norm(line) + "\n")
			if m := idRE.FindStringSubmatch(line); m != nil && !strings.Contains(line, `"method":`) {
				delete(want, canonID([]byte(m[1])))
			}
		case <-time.After(60 * time.Second):
			if writeErr != nil {
				t.Fatalf("no answer to %v within 60 s after %v; so far:\n%s", want, writeErr, out.String())
			}
			t.Fatalf("no answer to %v within 60 s; so far:\n%s", want, out.String())
		}
	}
	return out.String()
}

// canonID is an id as one text whichever way its JSON was written (an
// answer writes a string's escapes as go-sdk does).
func canonID(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// real puts the volatile values into s; norm takes them out again.
func (w *wireRun) real(s string) string {
	return strings.NewReplacer("WORKSPACE", w.f.ws, "HOME", w.f.home).Replace(s)
}

var versionRE = regexp.MustCompile(`("serverInfo":\{"name":"gemkit",(?:"title":"[^"]*",)?"version":)"[^"]*"`)

func (w *wireRun) norm(s string) string {
	s = strings.NewReplacer(w.f.ws, "WORKSPACE", w.f.home, "HOME").Replace(s)
	return versionRE.ReplaceAllString(s, `$1"VERSION"`)
}
