package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestServeStdio runs `gemkit ide serve --editor stdio` in process: it
// announces itself with server/ready and stops cleanly when stdin closes.
func TestServeStdio(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := newIDEClientEnv(tmp, "")
	ws := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr gemkittest.Output
	code := make(chan int, 1)
	go func() {
		code <- run(context.Background(), []string{"ide", "serve", "--editor", "stdio", "--workspace", ws,
			"--ide-pid", fmt.Sprint(os.Getpid()), "--ide-name", "vim", "--ide-display-name", "Vim"},
			env.app(Streams{In: inR, Out: outW, Err: &stderr}))
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	if !sc.Scan() {
		t.Fatalf("no server/ready; stderr: %s", stderr.String())
	}
	var ready struct {
		Method string `json:"method"`
		Params struct {
			Port          int               `json:"port"`
			DiscoveryFile string            `json:"discoveryFile"`
			Env           map[string]string `json:"env"`
		} `json:"params"`
	}
	if err := json.Unmarshal(sc.Bytes(), &ready); err != nil || ready.Method != "server/ready" {
		t.Fatalf("first line %s (%v)", sc.Text(), err)
	}
	p := ready.Params
	if filepath.Dir(p.DiscoveryFile) != filepath.Join(tmp, "gemini", "ide") ||
		filepath.Base(p.DiscoveryFile) != discovery.FileName(os.Getpid(), p.Port) {
		t.Fatalf("discovery file %s", p.DiscoveryFile)
	}
	data, err := os.ReadFile(p.DiscoveryFile)
	if err != nil {
		t.Fatal(err)
	}
	var df ide.DiscoveryFile
	json.Unmarshal(data, &df)
	if df.Port != p.Port || df.WorkspacePath != ws || df.IDEInfo == nil || df.IDEInfo.Name != "vim" || df.IDEInfo.DisplayName != "Vim" {
		t.Fatalf("discovery file content %s", data)
	}
	if p.Env[ide.EnvServerPort] != fmt.Sprint(p.Port) || p.Env[ide.EnvAuthToken] != df.AuthToken ||
		p.Env[ide.EnvWorkspacePath] != ws || p.Env[ide.EnvPID] != fmt.Sprint(os.Getpid()) {
		t.Fatalf("env %v", p.Env)
	}
	if !strings.Contains(stderr.String(), fmt.Sprintf("http://127.0.0.1:%d/mcp", p.Port)) {
		t.Fatalf("stderr does not say where it serves: %s", stderr.String())
	}
	go io.Copy(io.Discard, outR)
	inW.Close()
	select {
	case c := <-code:
		if c != ExitOK {
			t.Fatalf("exit %d; stderr: %s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop when stdin closed")
	}
	if _, err := os.Stat(p.DiscoveryFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("discovery file left after stdin closed")
	}
}

// TestServeTerminalPrintEnv: without --editor stdio it says where it
// serves and prints export lines; it stops when its context ends.
func TestServeTerminalPrintEnv(t *testing.T) {
	t.Parallel()
	env := newIDEClientEnv(t.TempDir(), "")
	ws := t.TempDir()
	var out, errOut gemkittest.Output
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	inR, inW := io.Pipe() // open input: at its end the terminal front-end stops
	defer inW.Close()
	go func() {
		code <- run(ctx, []string{"ide", "serve", "--workspace", ws, "--ide-pid", fmt.Sprint(os.Getpid()), "--print-env"},
			env.app(Streams{In: inR, Out: &out, Err: &errOut}))
	}()
	o := out.WaitFor(t, "the export lines", func(s string) bool { return strings.Contains(s, "Proposed changes will show here") })
	for _, want := range []string{"serving http://127.0.0.1:", "discovery file:", "export " + ide.EnvServerPort + "=", "export " + ide.EnvAuthToken + "=", "export " + ide.EnvPID + "=" + fmt.Sprint(os.Getpid()) + "\n", "export " + ide.EnvWorkspacePath + "=", "export CLAUDE_CODE_SSE_PORT=", "claude code:    ws://127.0.0.1:"} {
		if !strings.Contains(o, want) {
			t.Fatalf("output lacks %q:\n%s", want, o)
		}
	}
	// The terminal front-end does not repeat what --print-env printed.
	if n := strings.Count(o, ide.EnvAuthToken+"="); n != 1 {
		t.Fatalf("the token is printed %d times:\n%s", n, o)
	}
	cancel()
	select {
	case c := <-code:
		if c != ExitOK {
			t.Fatalf("exit %d; err: %s", c, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeTerminalInputEnds: with nothing on stdin the terminal
// front-end cannot ask anything; serve says so and stops cleanly.
func TestServeTerminalInputEnds(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := newIDEClientEnv(tmp, "")
	var out, errOut gemkittest.Output
	c := run(context.Background(), []string{"ide", "serve", "--workspace", t.TempDir(), "--ide-pid", fmt.Sprint(os.Getpid())},
		env.app(Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}))
	if c != ExitOK || !strings.Contains(errOut.String(), "input ended") {
		t.Fatalf("exit %d, stderr %q", c, errOut.String())
	}
	if ents, _ := os.ReadDir(filepath.Join(tmp, "gemini", "ide")); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

func TestServeBadFlags(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	file := filepath.Join(ws, "f")
	os.WriteFile(file, nil, 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown editor", []string{"--editor", "vim"}, "--editor must be stdio, lsp or terminal"},
		{"print-env with stdio", []string{"--editor", "stdio", "--print-env"}, "--print-env writes to stdout"},
		{"print-env with lsp", []string{"--editor", "lsp", "--print-env"}, "which --editor lsp uses for the protocol"},
		{"missing workspace", []string{"--workspace", filepath.Join(ws, "missing")}, "missing: no such folder"},
		{"file as workspace", []string{"--workspace", file}, "is not a folder"},
		{"negative pid", []string{"--ide-pid", "-4"}, "--ide-pid must be a positive pid"},
		{"arguments", []string{"extra"}, "unknown command"},
		{"zero debounce", []string{"--debounce", "0"}, "--debounce must be more than 0 and at most 10s (default 50ms), not 0s"},
		{"negative debounce", []string{"--debounce", "-1ms"}, "--debounce must be more than 0 and at most 10s (default 50ms), not -1ms"},
		{"debounce too long", []string{"--debounce", "10.001s"}, "--debounce must be more than 0 and at most 10s (default 50ms), not 10.001s"},
		{"debounce without unit", []string{"--debounce", "5"}, `invalid argument "5" for "--debounce"`},
		{"debounce not a duration", []string{"--debounce", "soon"}, `invalid argument "soon" for "--debounce"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut gemkittest.Output
			c := Run(context.Background(), append([]string{"ide", "serve"}, tt.args...), Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
			if c != ExitError || !strings.Contains(errOut.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want %q", c, errOut.String(), tt.want)
			}
		})
	}
}

// TestServeDebounceFlag: --debounce is hidden from the help (it is a
// knob for benchmarks and tests, and the real CLI expects the official
// 50 ms of gemini-cli 0.61.0 packages/vscode-ide-companion/src/open-files-manager.ts),
// and its bounds themselves are accepted.
func TestServeDebounceFlag(t *testing.T) {
	t.Parallel()
	var out, errOut gemkittest.Output
	if c := Run(context.Background(), []string{"ide", "serve", "--help"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}); c != ExitOK {
		t.Fatalf("--help: exit %d, stderr %q", c, errOut.String())
	}
	if !strings.Contains(out.String(), "--ide-pid") || strings.Contains(out.String(), "debounce") {
		t.Fatalf("help should list --ide-pid and not --debounce:\n%s", out.String())
	}
	for _, d := range []string{"1ns", "1ms", "10s"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			env := newIDEClientEnv(t.TempDir(), "")
			var out, errOut gemkittest.Output
			// Stdin already at its end: the server starts, announces
			// itself and stops at once.
			c := run(context.Background(), []string{"ide", "serve", "--editor", "stdio", "--debounce", d,
				"--workspace", t.TempDir(), "--ide-pid", fmt.Sprint(os.Getpid())},
				env.app(Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}))
			if c != ExitOK || !strings.Contains(out.String(), `"server/ready"`) {
				t.Fatalf("exit %d, stdout %q, stderr %q", c, out.String(), errOut.String())
			}
		})
	}
}

// TestServeSignals runs the real binary with each front-end and stops it
// with SIGTERM, SIGINT and SIGHUP (a closed terminal; Emacs's kill-emacs
// hangs up its language servers): each time the discovery file goes and
// the exit is clean.
func TestServeSignals(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	for _, front := range []string{"terminal", "stdio", "lsp"} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
			t.Run(front+"/"+sig.String(), func(t *testing.T) {
				t.Parallel()
				serveUntilSignal(t, bin, front, sig)
			})
		}
	}
}

func serveUntilSignal(t *testing.T, bin, front string, sig syscall.Signal) {
	tmp := t.TempDir()
	ws := t.TempDir()
	cmd := exec.Command(bin, "ide", "serve", "--editor", front, "--workspace", ws, "--ide-pid", fmt.Sprint(os.Getpid()))
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CLAUDE_CONFIG_DIR="+t.TempDir(), "QWEN_HOME="+t.TempDir())
	var out gemkittest.Output
	cmd.Stdout, cmd.Stderr = &out, &out
	// Keep stdin open: at its end a terminal front-end quits.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if front == "lsp" {
		// The companion starts on initialize.
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}`
		fmt.Fprintf(stdin, "Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	dir := filepath.Join(tmp, "gemini", "ide")
	var file string
	// The real gemkit process writes the file on its own time.
	if !gemkittest.Poll(10*time.Second, 10*time.Millisecond, func() bool {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if _, _, ok := discovery.ParseFileName(e.Name()); ok {
				file = filepath.Join(dir, e.Name())
			}
		}
		return file != ""
	}) {
		cmd.Process.Kill()
		t.Fatalf("no discovery file; output: %s", out.String())
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after %v: %v; output: %s", sig, err, out.String())
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("discovery file left after %v", sig)
	}
}

// TestServeContainerEnv: in a container (a marker under the probed root)
// the reported env carries REMOTE_CONTAINERS=true, on the export lines
// and in server/ready, so that a CLI started in the editor's terminals
// dials 127.0.0.1 at once; stderr asks for no step, since a CLI started
// without it reaches the companion through the discovery file's stdio
// bridge (TestBridgeRealClientInContainer).
func TestServeContainerEnv(t *testing.T) {
	t.Parallel()
	env := newIDEClientEnv(t.TempDir(), "")
	env.unset("SSH_CONNECTION")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, ".dockerenv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"terminal", "stdio"} {
		t.Run(mode, func(t *testing.T) {
			ws := t.TempDir()
			var out, errOut gemkittest.Output
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			code := make(chan int, 1)
			inR, inW := io.Pipe()
			defer inW.Close()
			args := []string{"ide", "serve", "--workspace", ws, "--ide-pid", fmt.Sprint(os.Getpid()), "--container-root", root, "--editor", mode}
			want := "export REMOTE_CONTAINERS=true"
			if mode == "terminal" {
				args = append(args, "--print-env")
			} else {
				want = `"REMOTE_CONTAINERS":"true"`
			}
			go func() { code <- run(ctx, args, env.app(Streams{In: inR, Out: &out, Err: &errOut})) }()
			out.WaitFor(t, want, func(s string) bool { return strings.Contains(s, want) })
			if e := errOut.String(); strings.Contains(e, "container") || strings.Contains(e, "export line") {
				t.Fatalf("stderr asks for a step: %s", e)
			}
			cancel()
			select {
			case <-code:
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop")
			}
		})
	}
}

// TestServeReleasesPagesAfterClients: the companion gives back the
// executable's pages once it serves, and again once a change of clients
// has settled (a connect runs code that idle serving does not).
func TestServeReleasesPagesAfterClients(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := newIDEClientEnv(tmp, "")
	ws := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr gemkittest.Output
	a := env.app(Streams{In: inR, Out: outW, Err: &stderr})
	released := make(chan struct{}, 10)
	a.releasePages = func() (int64, error) {
		released <- struct{}{}
		return 0, nil
	}
	code := make(chan int, 1)
	go func() {
		code <- run(context.Background(), []string{"ide", "serve", "--editor", "stdio", "--workspace", ws,
			"--ide-pid", fmt.Sprint(os.Getpid())}, a)
		outW.Close()
	}()
	defer func() {
		inW.Close()
		<-code
	}()
	sc := bufio.NewScanner(outR)
	if !sc.Scan() {
		t.Fatalf("no server/ready; stderr: %s", stderr.String())
	}
	go io.Copy(io.Discard, outR)
	select {
	case <-released:
	case <-time.After(30 * time.Second):
		t.Fatal("no release once serving")
	}
	c, _, err := client.Connect(context.Background(), client.Options{
		Cwd: ws, Dir: filepath.Join(tmp, "gemini", "ide"), IDEPID: os.Getpid(),
		Getenv: func(string) string { return "" }, Host: "127.0.0.1",
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	select {
	case <-released:
	case <-time.After(30 * time.Second):
		t.Fatal("no release after a client connected")
	}
	// An agent quit and started again: the release follows its new
	// connect, not its leaving.
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, _, err = client.Connect(context.Background(), client.Options{
		Cwd: ws, Dir: filepath.Join(tmp, "gemini", "ide"), IDEPID: os.Getpid(),
		Getenv: func(string) string { return "" }, Host: "127.0.0.1",
	})
	if err != nil {
		t.Fatalf("connect again: %v", err)
	}
	defer c.Close(context.Background())
	select {
	case <-released:
	case <-time.After(30 * time.Second):
		t.Fatal("no release after a client connected again")
	}
}
