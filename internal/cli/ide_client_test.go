package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/conformance/scripted"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// gemkittest.Output is a bytes.Buffer safe for a command writing while the test
// reads.

type ideEnv struct {
	t      *testing.T
	tmp    string
	ws     string
	editor *scripted.Editor
	client *ideClientEnv
}

// startIDE runs `gemkit ide serve --editor stdio` for a workspace with
// this test as its editor, and sets up the environment of a CLI started
// in the workspace from the editor's terminal.
func startIDEEnv(t *testing.T) *ideEnv {
	t.Helper()
	bin := gemkittest.Gemkit(t)
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ed, err := scripted.Start(ctx, scripted.Options{Binary: bin, Workspace: []string{ws}, TMPDIR: tmp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ed.Stop)
	return &ideEnv{t: t, tmp: tmp, ws: ws, editor: ed, client: newIDEClientEnv(tmp, ws)}
}

// ideClientEnv is what the in-process client commands of one test see in
// place of the process's environment and working directory, so that tests
// run side by side: only the variables the test sets (no IDE variables of
// the machine's own terminal), discovery files under tmp (TMPDIR), this
// process as the editor's pid, and cwd as the working directory.
type ideClientEnv struct {
	mu   sync.Mutex
	vars map[string]string
	cwd  string
}

func newIDEClientEnv(tmp, cwd string) *ideClientEnv {
	return &ideClientEnv{cwd: cwd, vars: map[string]string{
		"TMPDIR":            tmp,
		"CLAUDE_CONFIG_DIR": filepath.Join(tmp, "claude"),
		ide.EnvQwenHome:     filepath.Join(tmp, "qwen"),
		ide.EnvPID:          strconv.Itoa(os.Getpid()),
		// Not a container companion: dial 127.0.0.1 even where /.dockerenv exists.
		"SSH_CONNECTION": "127.0.0.1 1 127.0.0.1 22",
	}}
}

func (c *ideClientEnv) set(k, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vars[k] = v
}

func (c *ideClientEnv) unset(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.vars, k)
}

func (c *ideClientEnv) chdir(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cwd = dir
}

func (c *ideClientEnv) lookup(k string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vars[k]
	return v, ok
}

// app is the application value of one run in this environment.
func (c *ideClientEnv) app(s Streams) *app {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := newApp(s)
	a.lookupEnv, a.cwd = c.lookup, c.cwd
	return a
}

// run runs gemkit with args through run, stdin holding stdin.
func (c *ideClientEnv) run(ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb gemkittest.Output
	code = run(ctx, args, c.app(Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb}))
	return code, out.String(), errb.String()
}

func TestIDEStatusAndDoctor(t *testing.T) {
	t.Parallel()
	e := startIDEEnv(t)
	ctx := context.Background()
	code, out, errOut := e.client.run(ctx, "", "ide", "status", "--json")
	if code != 0 {
		t.Fatalf("status exit %d: %s %s", code, out, errOut)
	}
	var st struct {
		Chosen     string `json:"chosen"`
		IDEProcess struct {
			PID    int    `json:"pid"`
			Source string `json:"source"`
		} `json:"ideProcess"`
		Files []struct {
			Name     string `json:"name"`
			PIDMatch bool   `json:"pidMatch"`
			Alive    bool   `json:"alive"`
			Mode     string `json:"mode"`
		} `json:"files"`
		Connect struct {
			OK      bool `json:"ok"`
			Diffing bool `json:"diffing"`
		} `json:"connect"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status json: %v\n%s", err, out)
	}
	if st.Chosen != filepath.Base(e.editor.Ready.DiscoveryFile) || !st.Connect.OK || !st.Connect.Diffing || len(st.Files) != 1 {
		t.Errorf("status %+v", st)
	}
	if st.IDEProcess.PID != os.Getpid() || st.IDEProcess.Source != "env" || !st.Files[0].PIDMatch || !st.Files[0].Alive || st.Files[0].Mode != "0600" {
		t.Errorf("status fields (as documented in docs/ide-client.md) %+v", st)
	}
	if strings.Contains(out, e.editor.Ready.Env[ide.EnvAuthToken]) {
		t.Error("status --json prints the token")
	}
	if code, out, _ := e.client.run(ctx, "", "ide", "status"); code != 0 || !strings.Contains(out, "Connect: ok") {
		t.Errorf("status text exit %d:\n%s", code, out)
	}
	if code, out, _ := e.client.run(ctx, "", "ide", "doctor"); code != 0 || !strings.Contains(out, "would connect") {
		t.Errorf("doctor exit %d:\n%s", code, out)
	}

	// From outside the workspace: doctor names the folders to use.
	e.client.chdir(t.TempDir())
	code, out, _ = e.client.run(ctx, "", "ide", "doctor")
	if code != ExitNo || !strings.Contains(out, "run the CLI from one of: "+e.ws) {
		t.Errorf("doctor outside exit %d:\n%s", code, out)
	}
	code, out, _ = e.client.run(ctx, "", "ide", "status")
	if code != ExitNo || !strings.Contains(out, "Directory mismatch") {
		t.Errorf("status outside exit %d:\n%s", code, out)
	}
}

func TestIDEDoctorFindings(t *testing.T) {
	t.Parallel()
	e := startIDEEnv(t)
	ctx := context.Background()
	dir := filepath.Dir(e.editor.Ready.DiscoveryFile)
	// A stale file of a dead editor, a file of another user, a readable
	// token and a closed port.
	write := func(name string, v any, mode os.FileMode) string {
		b, _ := json.Marshal(v)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("gemini-ide-server-99999999-1.json", map[string]any{"port": 1, "workspacePath": e.ws, "authToken": "x"}, 0o644)
	foreign := write("gemini-ide-server-99999998-2.json", map[string]any{"port": 2, "workspacePath": e.ws}, 0o600)
	if os.Getuid() == 0 {
		if err := os.Chown(foreign, 4321, 4321); err != nil {
			t.Fatal(err)
		}
	}
	write("gemini-ide-server-12-abc.json", map[string]any{}, 0o600)
	// The arguments are read only beside a command (getStdioConfigFromEnv);
	// the discovery file still comes first, so the CLI connects through it.
	e.client.set(ide.EnvServerStdioCmd, "sh")
	e.client.set(ide.EnvServerStdioArgs, "not json")
	// A file named after a dead pid whose port answers: not stale, and
	// deleting it would break the connection.
	var live map[string]any
	b, _ := os.ReadFile(e.editor.Ready.DiscoveryFile)
	_ = json.Unmarshal(b, &live)
	// A file of a running process (pid 1) whose companion stopped serving.
	closed := gemkittest.ClosedPort(t)
	write(fmt.Sprintf("gemini-ide-server-1-%d.json", closed), map[string]any{"port": closed, "workspacePath": e.ws, "authToken": "x"}, 0o600)
	misnamed := write(fmt.Sprintf("gemini-ide-server-99999997-%d.json", e.editor.Ready.Port), live, 0o600)
	code, out, _ := e.client.run(ctx, "", "ide", "doctor")
	for _, want := range []string{
		"stale: pid 99999999 has exited and nothing listens on port 1",
		"rm " + filepath.Join(dir, "gemini-ide-server-99999999-1.json"),
		"pid 99999997 in the name is not running, yet something answers on port " + strconv.Itoa(e.editor.Ready.Port),
		"mode 0644 lets other users read its token",
		fmt.Sprintf("port %d is closed on 127.0.0.1: the companion of pid 1 no longer serves", closed),
		"GEMINI_CLI_IDE_SERVER_STDIO_ARGS: is not a JSON array",
		"answers on port " + strconv.Itoa(e.editor.Ready.Port),
		"gemini-ide-server-12-abc.json: the CLI never reads this file",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor does not say %q:\n%s", want, out)
		}
	}
	if os.Getuid() == 0 && !strings.Contains(out, "owned by uid 4321") {
		t.Errorf("doctor does not name the other owner:\n%s", out)
	}
	if code != 0 {
		t.Errorf("doctor exit %d although our companion works", code)
	}
	if strings.Contains(out, "rm "+misnamed) {
		t.Errorf("doctor tells to delete the file of a companion that answers:\n%s", out)
	}
	os.Remove(misnamed)

	// A wrong token: the companion refuses it.
	var df map[string]any
	b, _ = os.ReadFile(e.editor.Ready.DiscoveryFile)
	_ = json.Unmarshal(b, &df)
	df["authToken"] = "stale-token"
	nb, _ := json.Marshal(df)
	if err := os.WriteFile(e.editor.Ready.DiscoveryFile, nb, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = e.client.run(ctx, "", "ide", "doctor")
	if code != ExitNo || !strings.Contains(out, "refused the token (HTTP 401)") {
		t.Errorf("doctor with a stale token exit %d:\n%s", code, out)
	}
}

// TestIDEDoctorNoCompanion: with no companion to connect to, doctor says
// so and what to do, rather than only quoting the real CLI, whose words
// for this case (IdeClient.connect in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts) blame the terminal.
func TestIDEDoctorNoCompanion(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	c := newIDEClientEnv(tmp, tmp)
	dir := filepath.Join(tmp, "gemini", "ide")
	check := func(what, want string) {
		t.Helper()
		code, out, _ := c.run(context.Background(), "", "ide", "doctor")
		if code != ExitNo || !strings.Contains(out, want) || !strings.Contains(out, "start the IDE companion in your editor") {
			t.Errorf("%s: doctor exit %d, want it to say %q:\n%s", what, code, want, out)
		}
		if strings.Count(out, "cannot be read") > 1 {
			t.Errorf("%s: repeated words:\n%s", what, out)
		}
	}
	check("no directory", "the discovery directory does not exist")
	code, out, _ := c.run(context.Background(), "", "ide", "status", "--no-connect")
	if code != 0 || strings.Count(out, "cannot be read") != 1 {
		t.Errorf("status exit %d:\n%s", code, out)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	check("empty directory", "the discovery directory holds no discovery file")
	if err := os.WriteFile(filepath.Join(dir, "gemini-ide-server-1-2.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("an unusable file", "none of the 1 discovery files can be used")
	code, out, _ = c.run(context.Background(), "", "ide", "status")
	if code != ExitNo || !strings.Contains(out, "No companion to connect to") || !strings.Contains(out, "Connect: FAILED: no companion") {
		t.Errorf("status exit %d:\n%s", code, out)
	}
}

// TestIDEDoctorEnvOnlyAndLegacy: a companion reached through the
// environment alone, and a legacy file read for a pid that is not running,
// both work; doctor must not advise undoing them.
func TestIDEDoctorEnvOnlyAndLegacy(t *testing.T) {
	t.Parallel()
	e := startIDEEnv(t)
	ctx := context.Background()
	live, err := os.ReadFile(e.editor.Ready.DiscoveryFile)
	if err != nil {
		t.Fatal(err)
	}

	// The environment of the editor's terminal, no discovery file.
	e.client.set("TMPDIR", t.TempDir())
	e.client.set("TERM_PROGRAM", "vscode")
	for _, k := range []string{ide.EnvServerPort, ide.EnvAuthToken, ide.EnvWorkspacePath} {
		e.client.set(k, e.editor.Ready.Env[k])
	}
	code, out, _ := e.client.run(ctx, "", "ide", "doctor")
	if code != 0 || !strings.Contains(out, "reaches the companion through this variable alone") || strings.Contains(out, "unset it") {
		t.Errorf("env only: doctor exit %d:\n%s", code, out)
	}
	for _, k := range []string{ide.EnvServerPort, ide.EnvAuthToken, ide.EnvWorkspacePath} {
		e.client.unset(k)
	}

	// A legacy file for the pid in GEMINI_CLI_IDE_PID.
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "gemini", "ide")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gemini-ide-server-99999996.json"), live, 0o600); err != nil {
		t.Fatal(err)
	}
	e.client.set("TMPDIR", tmp)
	e.client.set(ide.EnvPID, "99999996")
	code, out, _ = e.client.run(ctx, "", "ide", "doctor")
	if code != 0 || !strings.Contains(out, "legacy file name without a port") || strings.Contains(out, "ranks it after") {
		t.Errorf("legacy: doctor exit %d:\n%s", code, out)
	}
}

func TestIDEDoctorTermProgramGate(t *testing.T) {
	t.Parallel()
	e := startIDEEnv(t)
	// A companion that writes no ideInfo, seen from a terminal the real
	// CLI does not know.
	var df map[string]any
	b, _ := os.ReadFile(e.editor.Ready.DiscoveryFile)
	_ = json.Unmarshal(b, &df)
	delete(df, "ideInfo")
	nb, _ := json.Marshal(df)
	if err := os.WriteFile(e.editor.Ready.DiscoveryFile, nb, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := e.client.run(context.Background(), "", "ide", "doctor")
	if code != ExitNo || !strings.Contains(out, "has no ideInfo and this terminal is not one the real CLI recognises") {
		t.Errorf("doctor exit %d:\n%s", code, out)
	}
	e.client.set("TERM_PROGRAM", "vscode")
	code, out, _ = e.client.run(context.Background(), "", "ide", "doctor")
	if code != 0 || !strings.Contains(out, "connects only because TERM_PROGRAM") {
		t.Errorf("doctor with TERM_PROGRAM=vscode exit %d:\n%s", code, out)
	}
}

func TestIDEDiffCommand(t *testing.T) {
	t.Parallel()
	e := startIDEEnv(t)
	ctx := context.Background()
	target := filepath.Join(e.ws, "notes.txt")
	if err := os.WriteFile(target, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	proposal := filepath.Join(t.TempDir(), "proposal")
	if err := os.WriteFile(proposal, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dr := ideDiffRun{t: t, e: e}
	run := func(stdin string, args ...string) chan ideDiffResult { return dr.start(ctx, stdin, args...) }
	wait := dr.wait

	// Accepted with the person's edits: written atomically, mode kept.
	ch := run("", "ide", "diff", "notes.txt", "--new-file", proposal)
	d := wait("accept")
	if d.FilePath != target || d.NewContent != "new\n" {
		t.Errorf("diff shown %+v", d)
	}
	e.editor.Accept(target, "new, edited\n")
	r := <-ch
	got, _ := os.ReadFile(target)
	fi, _ := os.Stat(target)
	if r.code != 0 || string(got) != "new, edited\n" || fi.Mode().Perm() != 0o640 {
		t.Errorf("accepted: exit %d, file %q mode %v\n%s", r.code, got, fi.Mode(), r.errOut)
	}
	leftovers, _ := filepath.Glob(filepath.Join(e.ws, ".notes.txt.*.tmp"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	// Rejected, proposal from stdin: untouched, exit 1.
	ch = run("from stdin\n", "ide", "diff", target)
	if d := wait("reject"); d.NewContent != "from stdin\n" {
		t.Errorf("stdin proposal %+v", d)
	}
	e.editor.Reject(target)
	r = <-ch
	got, _ = os.ReadFile(target)
	if r.code != ExitNo || string(got) != "new, edited\n" {
		t.Errorf("rejected: exit %d, file %q\n%s", r.code, got, r.errOut)
	}

	// A new file accepted: created, with the folders it needs.
	fresh := filepath.Join(e.ws, "sub", "pkg", "fresh.txt")
	ch = run("hello\n", "ide", "diff", fresh)
	wait("new file")
	e.editor.Accept(fresh, "hello\n")
	if r = <-ch; r.code != 0 {
		t.Errorf("new file: exit %d %s", r.code, r.errOut)
	}
	if got, _ := os.ReadFile(fresh); string(got) != "hello\n" {
		t.Errorf("new file content %q", got)
	}

	diffKeepsOwnerAndLinks(t, dr, target, fresh)
	diffClosedUnanswered(t, dr, target)

	// Not text: refused before anything is shown (JSON would replace the
	// bad bytes and the accepted text would differ from the proposal).
	if code, _, errOut := e.client.run(ctx, "\xff\xfebinary", "ide", "diff", target); code != ExitError || !strings.Contains(errOut, "not UTF-8 text") {
		t.Errorf("binary proposal exit %d %s", code, errOut)
	}

	// Errors: exit 2 (a missing proposal file; no companion).
	if code, _, _ := e.client.run(ctx, "", "ide", "diff", target, "--new-file", filepath.Join(t.TempDir(), "none")); code != ExitError {
		t.Errorf("missing proposal exit %d", code)
	}
	e.editor.Stop()
	if code, _, errOut := e.client.run(ctx, "x", "ide", "diff", target); code != ExitError || !strings.Contains(errOut, "no IDE companion found") || !strings.Contains(errOut, "gemkit ide doctor") {
		t.Errorf("no companion exit %d %s", code, errOut)
	}
	if got, _ := os.ReadFile(target); string(got) != "new, edited\n" {
		t.Errorf("file changed by a failed diff: %q", got)
	}
}

// ideDiffResult is what one `gemkit ide diff` ended with.
type ideDiffResult struct {
	code        int
	out, errOut string
}

// ideDiffRun runs `gemkit ide diff` through e's client, in the
// background, and waits for the diffs it shows in e's scripted editor.
type ideDiffRun struct {
	t *testing.T
	e *ideEnv
}

// start runs the client with args and stdin; its result comes on the
// channel.
func (d ideDiffRun) start(ctx context.Context, stdin string, args ...string) chan ideDiffResult {
	ch := make(chan ideDiffResult, 1)
	go func() {
		c, o, eo := d.e.client.run(ctx, stdin, args...)
		ch <- ideDiffResult{c, o, eo}
	}()
	return ch
}

// wait is the next diff the editor shows, for what.
func (d ideDiffRun) wait(what string) scripted.Diff {
	select {
	case diff := <-d.e.editor.Opened:
		return diff
	case <-time.After(30 * time.Second):
		d.t.Fatalf("no diff shown for %s", what)
	}
	return scripted.Diff{}
}

// diffKeepsOwnerAndLinks: an accepted diff keeps the owner of another
// user's file (under root), prints what it cannot write, and writes
// through a symbolic link to target, which it leaves as it found it.
func diffKeepsOwnerAndLinks(t *testing.T, dr ideDiffRun, target, fresh string) {
	ctx := context.Background()
	// Under root, another user's file stays theirs.
	if os.Getuid() == 0 {
		if err := os.Chown(fresh, 4321, 4321); err != nil {
			t.Fatal(err)
		}
		ch := dr.start(ctx, "theirs\n", "ide", "diff", fresh)
		dr.wait("owner")
		dr.e.editor.Accept(fresh, "theirs\n")
		if r := <-ch; r.code != 0 {
			t.Errorf("owner: exit %d %s", r.code, r.errOut)
		}
		if fi, err := os.Stat(fresh); err != nil || fileUID(fi) != 4321 {
			t.Errorf("the owner was not kept: %v", err)
		}
	}

	// Accepted but not writable (a file where a folder must be): the
	// accepted text, edits included, is not lost but printed.
	blocked := filepath.Join(dr.e.ws, "notes.txt", "x.txt")
	ch := dr.start(ctx, "p\n", "ide", "diff", blocked)
	dr.wait("unwritable")
	dr.e.editor.Accept(blocked, "p, edited\n")
	if r := <-ch; r.code != ExitError || r.out != "p, edited\n" || !strings.Contains(r.errOut, "accepted text was printed on standard output") {
		t.Errorf("unwritable: exit %d, stdout %q\n%s", r.code, r.out, r.errOut)
	}

	// Through a symbolic link: the target changes, the link stays.
	link := filepath.Join(dr.e.ws, "link.txt")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	ch = dr.start(ctx, "via link\n", "ide", "diff", link)
	dr.wait("link")
	dr.e.editor.Accept(link, "via link\n")
	if r := <-ch; r.code != 0 {
		t.Errorf("link: exit %d %s", r.code, r.errOut)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(target); string(got) != "via link\n" {
		t.Errorf("target %q", got)
	}
	if err := os.WriteFile(target, []byte("new, edited\n"), 0o640); err != nil {
		t.Fatal(err)
	}
}

// diffClosedUnanswered: a diff of target interrupted, or not answered in
// time, is closed in the editor and leaves the file as it was.
func diffClosedUnanswered(t *testing.T, dr ideDiffRun, target string) {
	ctx := context.Background()
	// Ctrl-C while waiting (Main turns SIGINT into a cancelled context):
	// the diff is closed in the editor, the file untouched, exit 2.
	cctx, cancel := context.WithCancel(ctx)
	ch := dr.start(cctx, "interrupted\n", "ide", "diff", target)
	dr.wait("interrupt")
	cancel()
	r := <-ch
	if r.code != ExitError || !strings.Contains(r.errOut, "interrupted: the diff was closed in the editor; "+target+" is unchanged") {
		t.Errorf("interrupted: exit %d\n%s", r.code, r.errOut)
	}
	select {
	case p := <-dr.e.editor.Closed:
		if p != target {
			t.Errorf("closed %s", p)
		}
	case <-time.After(30 * time.Second):
		t.Error("the interrupted diff was not closed in the editor")
	}

	// No answer within --timeout: the same, with the reason.
	ch = dr.start(ctx, "late\n", "ide", "diff", target, "--timeout", "300ms")
	dr.wait("timeout")
	r = <-ch
	if r.code != ExitError || !strings.Contains(r.errOut, "no answer within 300ms: the diff was closed in the editor") {
		t.Errorf("timeout: exit %d\n%s", r.code, r.errOut)
	}
	if got, _ := os.ReadFile(target); string(got) != "new, edited\n" {
		t.Errorf("file changed by an unanswered diff: %q", got)
	}
}

func TestIDEWatchCommand(t *testing.T) {
	t.Parallel()
	e := startIDEEnv(t)
	f := filepath.Join(e.ws, "main.go")
	if err := os.WriteFile(f, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.editor.Focus(f, 3, 7, "sel")
	// --once prints the first context (the current one, from the GET stream).
	// The real gemkit process sends the context on its own time.
	var once string
	if !gemkittest.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		code, o, errOut := e.client.run(context.Background(), "", "ide", "watch", "--once", "--json")
		if once = o; code != 0 {
			t.Fatalf("watch --once exit %d: %s", code, errOut)
		}
		var ev struct {
			Event   string       `json:"event"`
			Context *ide.Context `json:"context"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(once)), &ev); err != nil {
			t.Fatalf("watch json: %v: %q", err, once)
		}
		if ev.Context == nil || ev.Context.WorkspaceState == nil || len(ev.Context.WorkspaceState.OpenFiles) != 1 {
			return false
		}
		file := ev.Context.WorkspaceState.OpenFiles[0]
		if file.Path != f || !file.IsActive || file.Cursor.Line != 3 || file.SelectedText != "sel" {
			t.Errorf("context %+v", file)
		}
		return true
	}) {
		t.Fatalf("no context with the file: %s", once)
	}

	// Streaming, human output, until the companion goes away (exit 1).
	var out, errb gemkittest.Output
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"ide", "watch"}, e.client.app(Streams{In: strings.NewReader(""), Out: &out, Err: &errb}))
	}()
	g := filepath.Join(e.ws, "other.go")
	if err := os.WriteFile(g, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitIDEOutput(t, &out, "Watching")
	e.editor.Focus(g, 1, 1, "")
	waitIDEOutput(t, &out, "> "+g+":1:1")
	e.editor.Trust(false)
	waitIDEOutput(t, &out, "NOT trusted")
	e.editor.Kill()
	select {
	case code := <-done:
		if code != ExitNo {
			t.Errorf("watch exit %d after the companion died", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("watch did not notice the companion dying:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "disconnected") {
		t.Errorf("no state change printed:\n%s", out.String())
	}
	if msg := errb.String(); !strings.Contains(msg, "the connection to the IDE companion was lost") || strings.Contains(msg, "/ide enable") {
		t.Errorf("watch's last words: %q", msg)
	}
}

func waitIDEOutput(t *testing.T, b *gemkittest.Output, want string) {
	t.Helper()
	b.WaitFor(t, fmt.Sprintf("%q", want), func(s string) bool { return strings.Contains(s, want) })
}

func TestIDECheckCommand(t *testing.T) {
	t.Parallel()
	e := startIDEEnv(t)
	code, out, errOut := e.client.run(context.Background(), "", "ide", "check")
	if code != 0 || !strings.Contains(out, ", 0 failed") {
		t.Fatalf("check exit %d:\n%s\n%s", code, out, errOut)
	}
	// Interactive: the "person" accepts the first diff and rejects the
	// second in the editor.
	go func() {
		for i := 0; i < 2; i++ {
			select {
			case d := <-e.editor.Opened:
				if strings.Contains(d.NewContent, "accept me") {
					e.editor.Accept(d.FilePath, d.NewContent+"edited\n")
				} else if strings.Contains(d.NewContent, "reject me") {
					e.editor.Reject(d.FilePath)
				} else {
					i-- // the non-interactive open/close probe
				}
			case <-time.After(30 * time.Second):
				return
			}
		}
	}()
	code, out, errOut = e.client.run(context.Background(), "", "ide", "check", "--interactive", "--json")
	var rep struct {
		Results []struct{ ID, Outcome, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check json: %v\n%s", err, out)
	}
	seen := map[string]string{}
	for _, r := range rep.Results {
		seen[r.ID] = r.Outcome
		if r.Outcome == "fail" {
			t.Errorf("check %s failed: %s", r.ID, r.Detail)
		}
	}
	if code != 0 || seen["diff.accept"] != "pass" || seen["diff.reject"] != "pass" {
		t.Errorf("interactive check exit %d: %v\n%s", code, seen, errOut)
	}
	if !strings.Contains(errOut, "ACCEPT it there") {
		t.Errorf("no instructions for the person:\n%s", errOut)
	}
}

// TestWatchHelpNamesExitCodes: every exit code of ide watch is in its help.
func TestWatchHelpNamesExitCodes(t *testing.T) {
	var out, errb strings.Builder
	if code := Run(context.Background(), []string{"ide", "watch", "--help"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"exit 1", "exit 0", "exits 2"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("help lacks %q:\n%s", want, out.String())
		}
	}
}
