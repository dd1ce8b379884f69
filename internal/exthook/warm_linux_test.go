package exthook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/hookclient"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

// warmServer serves h's warm runs on a socket of dir (made world-
// enterable when open, for a peer of another user) until the test ends;
// it returns the identity of the runs it serves (a test's own) and
// Serve's result, sent when it returns.
func warmServer(t *testing.T, h *Hook, dir string, idle time.Duration, done func(time.Time, Result)) (id string, served <-chan error) {
	t.Helper()
	id = fmt.Sprintf("test%d", time.Now().UnixNano())
	ln, release, err := WarmListen(dir, Key([]byte(id)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, ended := make(chan error, 1), make(chan struct{})
	srv := &Server{Hook: h, Launcher: &sandbox.Launcher{}, Listener: ln, Identity: []byte(id), Idle: idle, Done: done}
	go func() {
		defer close(ended)
		err := srv.Serve(ctx)
		release()
		ch <- err
	}()
	t.Cleanup(func() {
		cancel()
		<-ended
	})
	return id, ch
}

// warmRun runs the hook through the warm sandbox of the runs of
// identity id in dir, as
// `gemkit extensions hook` does, with input on its stdin.
func warmRun(t *testing.T, dir, id, input string) (code int, refused, stdout, stderr string, err error) {
	t.Helper()
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	go func() { io.WriteString(inW, input); inW.Close() }()
	var wg sync.WaitGroup
	var ob, eb strings.Builder
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(&ob, outR) }()
	go func() { defer wg.Done(); io.Copy(&eb, errR) }()
	code, refused, err = WarmRun(context.Background(), dir, []byte(id), inR, outW, errW)
	inR.Close()
	outW.Close()
	errW.Close()
	wg.Wait()
	return code, refused, ob.String(), eb.String(), err
}

// warmDir is a private folder for a test's sockets (short: a socket's
// path must fit in 108 bytes).
func warmDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gk-warm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestWarmRun: a warm sandbox runs the hook as a cold run does (stdin
// passes, gemkit's answer for its stdout, stderr and exit code comes
// back; confined; the workspace not written; a host refused and reported), once per claim,
// the next one set up meanwhile; each run checks the hook's Gate (the
// person's consent) again, and a refusal reaches the client in words,
// the command not run, and ends the server.
func TestWarmRun(t *testing.T) {
	h, ws := hookEnv(t, `input=$(cat)
grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\t\n' '  '
echo "in=$input key=${GEMINI_API_KEY:-none}"
echo ok > "$GEMINI_PROJECT_DIR/hook.txt" 2>/dev/null && echo wrote
getent hosts collector.example.net >/dev/null 2>&1 || echo "lookup refused" >&2
exit 3
`)
	var mu sync.Mutex
	allowed := true
	gates := 0
	h.Gate = func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		gates++
		if !allowed {
			return errors.New("you have not agreed to the extension hooked as it is now")
		}
		return nil
	}
	reports := make(chan Result, 3)
	dir := warmDir(t)
	key, served := warmServer(t, h, dir, time.Minute, func(_ time.Time, r Result) { reports <- r })
	for i := range 3 {
		input := fmt.Sprintf(`{"run":%d}`, i)
		code, refused, out, errOut, err := warmRun(t, dir, key, input)
		if err != nil || refused != "" || code != 3 {
			t.Fatalf("run %d: code %d, refused %q, err %v\nstderr: %s", i, code, refused, err, errOut)
		}
		for _, want := range []string{"NoNewPrivs: 1", "Seccomp: 2", "in=" + input + " key=none"} {
			if !strings.Contains(said(t, out), want) {
				t.Errorf("run %d: stdout lacks %q:\n%q", i, want, out)
			}
		}
		if strings.Contains(out, "wrote") {
			t.Errorf("run %d: the hook wrote into the workspace", i)
		}
		if !strings.Contains(errOut, "lookup refused") {
			t.Errorf("run %d: stderr %q", i, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "hook.txt")); err == nil {
		t.Error("the workspace was written")
	}
	// The refusals are reported once each run has ended.
	for i := range 3 {
		r := <-reports
		if !slices.ContainsFunc(r.Denied, func(d netproxy.Denial) bool { return strings.Contains(d.Host, "collector.example.net") }) {
			t.Errorf("run %d: the lookup was not reported: %+v", i, r.Denied)
		}
	}
	mu.Lock()
	if gates != 3 {
		t.Errorf("the gate ran %d times for 3 runs", gates)
	}
	allowed = false
	mu.Unlock()

	// Consent no longer holds: refused in words, the command not run,
	// and the server ends.
	code, refused, out, _, err := warmRun(t, dir, key, "{}")
	if err != nil || code != 1 || !strings.Contains(refused, "you have not agreed") || out != "" {
		t.Errorf("the refused run: code %d, refused %q, stdout %q, err %v", code, refused, out, err)
	}
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "you have not agreed") {
			t.Errorf("the server ended with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the server did not end after a refusal")
	}
	if _, err := os.Stat(WarmSocket(dir, Key([]byte(key)))); err == nil {
		t.Error("the socket outlived its server")
	}
	if _, _, _, _, err := warmRun(t, dir, key, "{}"); !errors.Is(err, ErrNoWarm) {
		t.Errorf("after the server's end: %v, want ErrNoWarm", err)
	}
}

// TestWarmRunUnprivileged runs TestWarmRun as uid 65534.
func TestWarmRunUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestWarmRun$")
}

// TestWarmIdle: a warm sandbox no one claims ends with its server after
// the idle time, its sandbox's processes with it, and its socket gone.
func TestWarmIdle(t *testing.T) {
	h, _ := hookEnv(t, "cat\n")
	dir := warmDir(t)
	key, served := warmServer(t, h, dir, 300*time.Millisecond, nil)
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("the idle server ended with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the idle server did not end")
	}
	if _, err := os.Stat(WarmSocket(dir, Key([]byte(key)))); err == nil {
		t.Error("the socket outlived its server")
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("processes left behind: %v", kids)
	}
}

// children are the live processes whose parent is this test process.
func children(t *testing.T) []string {
	t.Helper()
	var out []string
	entries, _ := os.ReadDir("/proc")
	me := fmt.Sprint(os.Getpid())
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == me && f[0] != "Z" {
			out = append(out, e.Name()+" "+s[:i+1])
		}
	}
	return out
}

// TestWarmKey: a warm sandbox is found only by the run it was set up
// for: any other workspace, environment (a secret's value, the
// session's id), session, or arguments (the store, the extension, the
// hook) name another one; and its server serves a run only while the
// store says the same of the hook (Fingerprint): any other extension,
// folder, hook, timeout, workspace, setting, widening or read-only
// folder changes it.
func TestWarmKey(t *testing.T) {
	s := &Session{Pid: 100, Start: 5}
	env := environ("/home/me", "/ws")
	args := []string{"extensions", "hook", "a", "BeforeTool-1"}
	// The socket's name is a digest of the identity; the server
	// compares the identity itself (TestWarmIdentity).
	Key := func(s *Session, cwd string, env, args []string) (string, error) {
		id, err := Identity(s, cwd, env, args)
		return string(id), err
	}
	want, err := Key(s, "/ws", env, args)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Key(s, "/ws", env, args); again != want {
		t.Fatal("the same run has two keys")
	}
	// What a shell keeps for itself changes between the runs of one
	// session's shell, and no run reads it.
	if got, _ := Key(s, "/ws", append(slices.Clone(env), "PWD=/elsewhere", "OLDPWD=/ws", "SHLVL=3", "_=/usr/bin/gemkit"), args); got != want {
		t.Error("a shell's own variables changed the key")
	}
	type run struct {
		s    Session
		cwd  string
		env  []string
		args []string
	}
	for name, change := range map[string]func(r *run){
		"workspace":  func(r *run) { r.cwd = "/ws2" },
		"secret":     func(r *run) { r.env[5] = "GITHUB_TOKEN=other" },
		"session id": func(r *run) { r.env = append(r.env, "GEMINI_SESSION_ID=s-2") },
		"session":    func(r *run) { r.s.Pid = 101 },
		"restarted":  func(r *run) { r.s.Start = 6 },
		"store":      func(r *run) { r.args = append([]string{"--home", "/other"}, r.args...) },
		"extension":  func(r *run) { r.args[2] = "b" },
		"hook":       func(r *run) { r.args[3] = "BeforeTool-2" },
	} {
		r := run{*s, "/ws", slices.Clone(env), slices.Clone(args)}
		change(&r)
		if got, _ := Key(&r.s, r.cwd, r.env, r.args); got == want {
			t.Errorf("another %s, the same key", name)
		}
	}

	base := func() *Hook {
		return &Hook{Extension: "a", Dir: "/ext/a", Workspace: "/ws", Environ: environ("/home/me", "/ws"),
			Settings: map[string]string{"K": "v"},
			Hook:     extension.CommandHook{Event: "BeforeTool", Label: "BeforeTool-1", Command: "run"}}
	}
	fp, err := base().Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(h *Hook){
		"extension": func(h *Hook) { h.Extension = "b" },
		"folder":    func(h *Hook) { h.Dir = "/ext/b" },
		"hook":      func(h *Hook) { h.Hook.Command = "run2" },
		"timeout":   func(h *Hook) { h.Hook.Timeout = 5 },
		"workspace": func(h *Hook) { h.Workspace = "/ws2" },
		"setting":   func(h *Hook) { h.Settings["K"] = "w" },
		"widening":  func(h *Hook) { h.Widening.Write = extension.AccessWorkspace },
		"read-only": func(h *Hook) { h.ReadOnly = []string{"/x"} },
		"env":       func(h *Hook) { h.Environ[5] = "GITHUB_TOKEN=other" },
	} {
		h := base()
		change(h)
		if got, _ := h.Fingerprint(); got == fp {
			t.Errorf("another %s, the same fingerprint", name)
		}
	}
}

// TestWarmPeer: a warm server serves only its own user: a peer of
// another uid (root, which may enter the folder) is refused before it
// claims the sandbox, whose run then waits for its own user's client;
// and a client refuses a server of another user.
func TestWarmPeer(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to connect as another user than the server's; CI runs as root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv is not installed: run scripts/setup-and-test, or apt-get install -y util-linux (%v)", err)
	}
	// The server runs as uid 65534 (this test binary again, below);
	// root connects to it.
	dir, err := os.MkdirTemp("", "gk-warm-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chown(dir, 65534, 65534)
	os.Chmod(dir, 0o700)
	exe, _ := os.Executable()
	bin := filepath.Join(dir, "test.bin")
	if b, err := os.ReadFile(exe); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatal(err)
	}
	srv := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run=^$")
	srv.Env = append(os.Environ(), warmPeerServerEnv+"="+dir)
	out, _ := srv.StdoutPipe()
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	line := make([]byte, 64)
	n, _ := out.Read(line)
	key := strings.TrimSpace(string(line[:n]))
	if key == "" {
		t.Fatal("the server did not start")
	}
	// Root's client: the server is another user's, so the client does
	// not hand it its descriptors.
	if _, _, _, _, err := warmRun(t, dir, key, "{}"); !errors.Is(err, ErrNoWarm) || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("root's client to uid 65534's server: %v", err)
	}
	// Root's request sent all the same: refused, unclaimed.
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: WarmSocket(dir, Key([]byte(key))), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	if _, _, err := conn.WriteMsgUnix(hookclient.RequestOf([]byte(key)), unixRights(r, w, w), nil); err != nil {
		// The server refused the peer, and closed, before the request
		// was sent (it checks the peer first): refused, unanswered.
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return
		}
		t.Fatal(err)
	}
	var b [1]byte
	if n, err := conn.Read(b[:]); n != 0 || err == nil {
		t.Errorf("root's request was answered %q (%v)", b[:n], err)
	}
}

// warmPeerServerEnv makes this test binary the warm server of
// TestWarmPeer, serving a hook in the folder it names and printing its
// key.
const warmPeerServerEnv = "GEMKIT_EXTHOOK_TEST_WARM_SERVER"

// warmPeerServer is that server.
func warmPeerServer(dir string) int {
	// The test kills this server, so its folders live in dir, which the
	// test removes.
	root, err := os.MkdirTemp(dir, "peer-")
	if err != nil {
		return 1
	}
	ws := filepath.Join(root, "ws")
	os.MkdirAll(filepath.Join(root, "ext"), 0o755)
	os.MkdirAll(ws, 0o755)
	h := &Hook{Extension: "hooked", Dir: filepath.Join(root, "ext"), Workspace: ws, Environ: environ(root, ws),
		Hook: extension.CommandHook{Event: "BeforeTool", Label: "BeforeTool-1", Command: "echo ran"}}
	key := "peer"
	ln, release, err := WarmListen(dir, Key([]byte(key)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer release()
	fmt.Println(key)
	srv := &Server{Hook: h, Launcher: &sandbox.Launcher{}, Listener: ln, Identity: []byte(key), Idle: time.Minute}
	if err := srv.Serve(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func init() {
	if dir := os.Getenv(warmPeerServerEnv); dir != "" {
		os.Exit(warmPeerServer(dir))
	}
	if v := os.Getenv(warmClientEnv); v != "" {
		os.Exit(warmClientMain(v))
	}
}

func unixRights(files ...*os.File) []byte {
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	return unix.UnixRights(fds...)
}

// TestWarmSandboxedPeer: a sandboxed process of the same user that
// reaches a warm sandbox's socket (here a hook whose workspace holds it,
// allowed Unix sockets by name: the real folder is closed to every
// sandboxed process) is refused before it claims the sandbox, which
// stays set up for gemkit's own client.
func TestWarmSandboxedPeer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	target, _ := hookEnv(t, "cat >/dev/null; echo ran\n")
	gates := make(chan struct{}, 8)
	target.Gate = func(context.Context) error { gates <- struct{}{}; return nil }
	attacker, ws := hookEnv(t, "")
	dir := filepath.Join(ws, "sock")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, _ := warmServer(t, target, dir, time.Minute, nil)
	attacker.Hook.Command = exe
	attacker.Hook.Env = map[string]string{warmClientEnv: dir + "|" + key}
	attacker.Widening.UnixSockets = true
	var out, errb strings.Builder
	if _, err := attacker.Run(context.Background(), &sandbox.Launcher{}, strings.NewReader("{}"), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "err "+ErrNoWarm.Error()) {
		t.Errorf("the sandboxed client: %q\nstderr: %s", out.String(), errb.String())
	}
	select {
	case <-gates:
		t.Error("the sandboxed client's run passed the gate")
	default:
	}
	// gemkit's own client is served.
	if code, refused, o, _, err := warmRun(t, dir, key, "{}"); err != nil || refused != "" || code != 0 || o != `{"systemMessage":"ran"}`+"\n" {
		t.Errorf("the person's client after it: %d %q %q %v", code, refused, o, err)
	}
}

// TestWarmSandboxedPeerUnprivileged runs TestWarmSandboxedPeer as uid 65534.
func TestWarmSandboxedPeerUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestWarmSandboxedPeer$")
}

// warmClientEnv makes this test binary a warm client of the socket
// "dir|key" it names, printing the outcome.
const warmClientEnv = "GEMKIT_EXTHOOK_TEST_WARM_CLIENT"

func warmClientMain(v string) int {
	dir, key, _ := strings.Cut(v, "|")
	code, refused, err := WarmRun(context.Background(), dir, []byte(key), os.Stdin, os.Stdout, os.Stderr)
	fmt.Printf("code %d refused %q err %v\n", code, refused, err)
	return 0
}

// TestWarmSideBySide: a run that comes while another runs is served by
// a sandbox set up at once (the next one is otherwise set up only once
// a run is answered), not after the first run's end: the first run's
// hook waits for the end of its stdin, which the test closes only once
// the second run has been answered.
func TestWarmSideBySide(t *testing.T) {
	h, _ := hookEnv(t, `echo started >&2; cat >/dev/null; echo "done"`)
	// The first run's hook starts once its sandbox was claimed and the
	// gate passed (its stderr reaches the run only at its end).
	gated := make(chan struct{}, 2)
	h.Gate = func(context.Context) error { gated <- struct{}{}; return nil }
	dir := warmDir(t)
	key, _ := warmServer(t, h, dir, time.Minute, nil)
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	defer inW.Close()
	type result struct {
		code int
		err  error
	}
	first := make(chan result, 1)
	go func() {
		code, _, err := WarmRun(context.Background(), dir, []byte(key), inR, outW, errW)
		first <- result{code, err}
	}()
	var ob strings.Builder
	copied := make(chan struct{})
	go func() { io.Copy(&ob, outR); close(copied) }()
	<-gated
	go io.Copy(io.Discard, errR)
	code, refused, out, errOut, err := warmRun(t, dir, key, "{}")
	if err != nil || refused != "" || code != 0 || out != `{"systemMessage":"done"}`+"\n" || errOut != "started\n" {
		t.Fatalf("the second run beside the first: code %d, refused %q, stdout %q, err %v\nstderr: %s", code, refused, out, err, errOut)
	}
	select {
	case r := <-first:
		t.Fatalf("the first run ended before its stdin did: %+v", r)
	default:
	}
	inW.Close()
	r := <-first
	inR.Close()
	outW.Close()
	errW.Close()
	<-copied
	if r.err != nil || r.code != 0 || ob.String() != `{"systemMessage":"done"}`+"\n" {
		t.Errorf("the first run: %+v, stdout %q", r, ob.String())
	}
}

// TestWarmSideBySideUnprivileged runs TestWarmSideBySide as uid 65534.
func TestWarmSideBySideUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestWarmSideBySide$")
}

// TestWarmIdentity: a warm server serves only the run whose identity
// (hookclient.Identity) is the one it was set up for: the socket's name
// is a digest anyone could match, so a request that names another
// identity at its socket (longer, shorter, or of the same length) is
// left unclaimed, its descriptors unused, and the sandbox stays set up
// for its own run.
func TestWarmIdentity(t *testing.T) {
	h, _ := hookEnv(t, "cat >/dev/null; echo ran\n")
	gates := make(chan struct{}, 8)
	h.Gate = func(context.Context) error { gates <- struct{}{}; return nil }
	dir := warmDir(t)
	id, _ := warmServer(t, h, dir, time.Minute, nil)
	for _, other := range []string{id + "x", id[:len(id)-1], id[:len(id)-1] + "?", ""} {
		conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: WarmSocket(dir, Key([]byte(id))), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		r, w, _ := os.Pipe()
		if _, _, err := conn.WriteMsgUnix(hookclient.RequestOf([]byte(other)), unixRights(r, w, w), nil); err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		if n, err := conn.Read(b[:]); n != 0 || err == nil {
			t.Errorf("a request of identity %q was answered %q (%v)", other, b[:n], err)
		}
		conn.Close()
		r.Close()
		w.Close()
	}
	select {
	case <-gates:
		t.Error("another identity's request passed the gate")
	default:
	}
	if code, refused, o, _, err := warmRun(t, dir, id, "{}"); err != nil || refused != "" || code != 0 || o != `{"systemMessage":"ran"}`+"\n" {
		t.Errorf("the run of its own identity after them: %d %q %q %v", code, refused, o, err)
	}
}

// TestWarmIdentityUnprivileged runs TestWarmIdentity as uid 65534.
func TestWarmIdentityUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestWarmIdentity$")
}
