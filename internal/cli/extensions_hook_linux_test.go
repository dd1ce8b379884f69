package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestHookConsent: a switched hook runs only as the person agreed to
// it. Once a file of its extension changes (here the one the hook's
// command reads), gemkit extensions hook refuses in words (exit 1,
// Gemini CLI's warning) and the command does not run; consent to the
// extension as it is now lets it run again. The check runs while the
// sandbox is set up (sandbox.Command.Gate): the command's start waits
// for it.
func TestHookConsent(t *testing.T) {
	e := newEnv(t)
	// The hook's workspace is the folder Gemini CLI starts it in.
	t.Chdir(e.ws)
	src := filepath.Join(t.TempDir(), "noted")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json": `{"name": "noted", "version": "1.0.0"}`,
		"hooks/hooks.json":      `{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "cat >/dev/null; cat ${extensionPath}/hooks/verdict.json"}]}]}}`,
		"hooks/verdict.json":    `{"decision":"ask"}` + "\n",
	})
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "noted")
	if out, errOut, code := e.run("hook", "noted", "BeforeTool-1"); code != ExitOK || out != `{"decision":"ask"}`+"\n" {
		t.Fatalf("the agreed hook: exit %d, stdout %q\nstderr:\n%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(src, "hooks", "verdict.json"), []byte(`{"decision":"deny","reason":"changed"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := e.run("hook", "noted", "BeforeTool-1")
	if code != ExitNo || strings.Contains(out, "changed") || !strings.Contains(errOut, "gemkit did not run the hook: you have not agreed to the extension noted as it is now") {
		t.Errorf("the changed extension's hook: exit %d, stdout %q\nstderr:\n%s", code, out, errOut)
	}
	e.mustRun("consent", "noted", "--grant")
	if out, errOut, code := e.run("hook", "noted", "BeforeTool-1"); code != ExitOK || !strings.Contains(out, "changed") {
		t.Errorf("agreed again: exit %d, stdout %q\nstderr:\n%s", code, out, errOut)
	}
}

// TestHookConsentUnprivileged runs TestHookConsent as uid 65534.
func TestHookConsentUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestHookConsent$")
}

// TestHookWarm: after a hook has run, gemkit leaves the next run's
// sandbox set up (a warm server, gemkit again, waiting beside Gemini
// CLI's session), and the next `gemkit extensions hook` of the same hook
// runs there: same output and exit code, the prepared sandbox consumed,
// no second server. The warm server checks consent at every run: once
// the extension changed, the run is refused in words, the command not
// run, and the server ends; consent again runs it (cold, then warm).
// Another workspace's run is never served by this one's sandbox, and
// when the session ends (the process that ran the hooks, here timeout,
// as Gemini CLI's node would) every server and sandbox of it ends too.
func TestHookWarm(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "noted")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json": `{"name": "noted", "version": "1.0.0"}`,
		"hooks/hooks.json":      `{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "cat >/dev/null; cat ${extensionPath}/hooks/verdict.json"}]}]}}`,
		"hooks/verdict.json":    `{"decision":"ask"}` + "\n",
	})
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "noted")
	hs := startHookSession(t, e)
	hook, servers, oneReady := hs.hook, hs.servers, hs.oneReady
	ws2 := filepath.Join(e.home, "projects", "other")
	must(t, os.MkdirAll(ws2, 0o755))

	if code, o, eo := hook(e.ws); code != ExitOK || o != `{"decision":"ask"}`+"\n" {
		t.Fatalf("the first (cold) run: exit %d, stdout %q\nstderr:\n%s", code, o, eo)
	}
	server, prepared := oneReady("after the first run")
	if code, o, eo := hook(e.ws); code != ExitOK || o != `{"decision":"ask"}`+"\n" {
		t.Fatalf("the second (warm) run: exit %d, stdout %q\nstderr:\n%s", code, o, eo)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", prepared)); err == nil {
		t.Errorf("the prepared sandbox %d was not the one that ran", prepared)
	}
	if s2, _ := oneReady("after the warm run"); s2 != server {
		t.Errorf("another server (%d, not %d) after the warm run", s2, server)
	}

	// Consent no longer holds: refused in words, by the warm server.
	must(t, os.WriteFile(filepath.Join(src, "hooks", "verdict.json"), []byte(`{"decision":"deny","reason":"changed"}`+"\n"), 0o644))
	code, o, eo := hook(e.ws)
	if code != ExitNo || o != "" || !strings.Contains(eo, "gemkit did not run the hook: you have not agreed to the extension noted as it is now") {
		t.Errorf("the changed extension's hook: exit %d, stdout %q\nstderr:\n%s", code, o, eo)
	}
	if !gemkittest.Poll(time.Minute, 20*time.Millisecond, func() bool { return len(servers()) == 0 }) {
		t.Errorf("the warm server outlived the refusal: %v", servers())
	}
	e.mustRun("consent", "noted", "--grant")
	for i := range 2 {
		if code, o, eo := hook(e.ws); code != ExitOK || !strings.Contains(o, "changed") {
			t.Fatalf("agreed again, run %d: exit %d, stdout %q\nstderr:\n%s", i, code, o, eo)
		}
		server, prepared = oneReady("agreed again")
	}

	refusesEveryChange(t, e, hs, src)
	// Consent withdrawn, the files as they were: the warm server, which
	// reads the records at each run, refuses it in words.
	if code, o, eo := hook(e.ws); code != ExitOK {
		t.Fatalf("before the withdrawal: exit %d, stdout %q\nstderr:\n%s", code, o, eo)
	}
	server, prepared = oneReady("before the withdrawal")
	e.mustRun("consent", "noted", "--revoke")
	code, o, eo = hook(e.ws)
	if code != ExitNo || o != "" || !strings.Contains(eo, "gemkit did not run the hook: you have not agreed to the extension noted") {
		t.Errorf("consent withdrawn: exit %d, stdout %q\nstderr:\n%s", code, o, eo)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", server)); err == nil && !gemkittest.Poll(time.Minute, 20*time.Millisecond, func() bool { return len(servers()) == 0 }) {
		t.Errorf("the warm server outlived the withdrawal: %v", servers())
	}
	e.mustRun("consent", "noted", "--grant")
	for i := range 2 {
		if code, o, eo := hook(e.ws); code != ExitOK {
			t.Fatalf("agreed once more, run %d: exit %d, stdout %q\nstderr:\n%s", i, code, o, eo)
		}
		server, prepared = oneReady("agreed once more")
	}

	// Another workspace: its own run, never this one's sandbox.
	if code, o, eo := hook(ws2); code != ExitOK || !strings.Contains(o, "renamed") {
		t.Fatalf("another workspace: exit %d, stdout %q\nstderr:\n%s", code, o, eo)
	}
	if !gemkittest.Poll(time.Minute, 20*time.Millisecond, func() bool { return len(servers()) == 2 }) {
		t.Errorf("no server of its own for the other workspace: %v", servers())
	}
	if kids := servers()[server]; len(kids) != 1 || kids[0] != prepared {
		t.Errorf("the first workspace's prepared sandbox %d changed: %v", prepared, kids)
		for pid, p := range processes() {
			if strings.Contains(p.args, e.home) || pid == server || p.ppid == server {
				t.Logf("pid %d ppid %d: %s", pid, p.ppid, p.args)
			}
		}
	}

	// The session ends: so does every server of it, with its sandboxes.
	hs.end()
	if !gemkittest.Poll(time.Minute, 20*time.Millisecond, func() bool { return len(servers()) == 0 }) {
		t.Errorf("warm servers outlived their session: %v", servers())
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", prepared)); err == nil {
		t.Errorf("the prepared sandbox %d outlived its session", prepared)
	}
	socks, _ := filepath.Glob(filepath.Join(hs.rt, "gemkit", "hook-*.sock"))
	if len(socks) > 0 {
		t.Errorf("sockets left: %v", socks)
	}
}

// refusesEveryChange: the extension src changed while a warm server
// waits with its files read ahead under a watch: each way of changing
// them, a hard link made from outside among them, is never run without
// consent, and the server ends.
func refusesEveryChange(t *testing.T, e *env, hs *hookSession, src string) {
	t.Helper()
	verdict := filepath.Join(src, "hooks", "verdict.json")
	outside := filepath.Join(t.TempDir(), "linked")
	for _, c := range []struct {
		name         string
		change, undo func()
	}{
		{"written in place", func() { must(t, os.WriteFile(verdict, []byte(`{"decision":"ask","reason":"in place"}`+"\n"), 0o644)) }, nil},
		{"a new file", func() { must(t, os.WriteFile(filepath.Join(src, "hooks", "new.sh"), []byte("true\n"), 0o644)) }, nil},
		{"renamed over", func() {
			tmp := filepath.Join(src, "hooks", ".v")
			must(t, os.WriteFile(tmp, []byte(`{"decision":"ask","reason":"renamed"}`+"\n"), 0o644))
			must(t, os.Rename(tmp, verdict))
		}, nil},
		{"made executable", func() { must(t, os.Chmod(verdict, 0o755)) }, nil},
		{"a new folder", func() {
			must(t, os.MkdirAll(filepath.Join(src, "lib", "deep"), 0o755))
			must(t, os.WriteFile(filepath.Join(src, "lib", "deep", "x.js"), []byte("1\n"), 0o644))
		}, nil},
		{"hard-linked from outside", func() { must(t, os.Link(verdict, outside)) }, func() { must(t, os.Remove(outside)) }},
	} {
		if code, o, eo := hs.hook(e.ws); code != ExitOK || !strings.Contains(o, "decision") {
			t.Fatalf("%s: the run before: exit %d, stdout %q\nstderr:\n%s", c.name, code, o, eo)
		}
		hs.oneReady(c.name + ": before")
		c.change()
		code, o, eo := hs.hook(e.ws)
		if code != ExitNo || o != "" || !strings.Contains(eo, "gemkit did not run the hook") {
			t.Errorf("%s: exit %d, stdout %q\nstderr:\n%s", c.name, code, o, eo)
		}
		if !gemkittest.Poll(time.Minute, 20*time.Millisecond, func() bool { return len(hs.servers()) == 0 }) {
			t.Errorf("%s: a warm server outlived the change: %v", c.name, hs.servers())
		}
		if c.undo != nil {
			c.undo()
		}
		e.mustRun("consent", "noted", "--grant")
	}
}

// hookSession is Gemini CLI's session as TestHookWarm plays it: timeout
// (no shell, as Gemini CLI's node would be) running a shell that runs
// each hook asked for on its stdin, as Gemini CLI's bash -c would; the
// warm servers the hooks leave are the session's.
type hookSession struct {
	t       *testing.T
	e       *env
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies *bufio.Scanner
	rt, out string // the runtime folder, and where each run's output goes
	n       int
	ended   bool
}

// startHookSession starts the session of e's noted extension's
// BeforeTool-1 hook; it is killed at the test's end unless ended.
func startHookSession(t *testing.T, e *env) *hookSession {
	exe, err := os.Executable()
	must(t, err)
	rt, err := os.MkdirTemp("", "gk-rt-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(rt) })
	out := t.TempDir()
	in := filepath.Join(out, "input.json")
	must(t, os.WriteFile(in, []byte(`{"hook_event_name":"BeforeTool","tool_name":"write_file"}`), 0o644))

	session := exec.Command("timeout", "600", "bash", "-c", `while read n dir; do cd "$dir"; "$GK" extensions hook --home "$GKHOME" noted BeforeTool-1 <"$IN" >"$OUT/$n.out" 2>"$OUT/$n.err"; echo "$n $?"; done`)
	session.Env = append(os.Environ(), asGemkitEnv+"=1", "GK="+exe, "GKHOME="+e.home, "HOME="+e.home, "IN="+in, "OUT="+out, "XDG_RUNTIME_DIR="+rt)
	stdin, err := session.StdinPipe()
	must(t, err)
	stdoutPipe, err := session.StdoutPipe()
	must(t, err)
	session.Stderr = os.Stderr
	must(t, session.Start())
	s := &hookSession{t: t, e: e, cmd: session, stdin: stdin, replies: bufio.NewScanner(stdoutPipe), rt: rt, out: out}
	t.Cleanup(func() {
		if !s.ended {
			session.Process.Kill()
			session.Wait()
		}
	})
	return s
}

// hook runs the hook in the workspace dir through the session.
func (s *hookSession) hook(dir string) (code int, stdout, stderr string) {
	s.t.Helper()
	s.n++
	fmt.Fprintf(s.stdin, "%d %s\n", s.n, dir)
	if !s.replies.Scan() {
		s.t.Fatalf("the session ended: %v", s.replies.Err())
	}
	var got int
	fmt.Sscanf(s.replies.Text(), "%d %d", &got, &code)
	o, _ := os.ReadFile(filepath.Join(s.out, fmt.Sprint(s.n)+".out"))
	eb, _ := os.ReadFile(filepath.Join(s.out, fmt.Sprint(s.n)+".err"))
	return code, string(o), string(eb)
}

// servers are the warm servers of this test's store, and each one's
// prepared sandbox.
func (s *hookSession) servers() map[int][]int {
	all := map[int][]int{}
	for pid, cmdline := range processes() {
		if strings.Contains(cmdline.args, "--"+warmServeFlag) && strings.Contains(cmdline.args, s.e.home) {
			all[pid] = nil
		}
	}
	for pid, p := range processes() {
		if _, ok := all[p.ppid]; ok {
			all[p.ppid] = append(all[p.ppid], pid)
		}
	}
	return all
}

// oneReady waits for one warm server with its one sandbox, and answers
// from the one look that found them: a look after it may see a server's
// child between its fork and its exec, which has the server's command
// line.
func (s *hookSession) oneReady(what string) (server, sandbox int) {
	s.t.Helper()
	ok := gemkittest.Poll(time.Minute, 20*time.Millisecond, func() bool {
		all := s.servers()
		if len(all) != 1 {
			return false
		}
		for pid, kids := range all {
			if len(kids) == 1 {
				server, sandbox = pid, kids[0]
				return true
			}
		}
		return false
	})
	if !ok {
		s.t.Fatalf("%s: no one warm server with its sandbox: %v", what, s.servers())
	}
	return server, sandbox
}

// end ends the session: its shell's input closes, and it exits.
func (s *hookSession) end() {
	s.stdin.Close()
	must(s.t, s.cmd.Wait())
	s.ended = true
}

// TestHookWarmUnprivileged runs TestHookWarm as uid 65534.
func TestHookWarmUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestHookWarm$")
}

// procInfo is a process as /proc shows it: its parent and its arguments.
type procInfo struct {
	ppid int
	args string
}

// processes are the live processes of the machine.
func processes() map[int]procInfo {
	out := map[int]procInfo{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		args, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[pid] = procInfo{ppid: ppid, args: string(bytes.ReplaceAll(args, []byte{0}, []byte{' '}))}
	}
	return out
}

// TestHookTimedOutSaysSo: a hook stopped at its timeout ends with words
// naming the timeout and where it is set, not with an exit status alone
// (the newcomer tour's `sleep 30` under "timeout": 2000 exited 1 with an
// empty stderr).
func TestHookTimedOutSaysSo(t *testing.T) {
	e := newEnv(t)
	t.Chdir(e.ws)
	src := filepath.Join(t.TempDir(), "slow")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json": `{"name": "slow", "version": "1.0.0"}`,
		"hooks/hooks.json":      `{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "cat >/dev/null; sleep 30", "timeout": 300}]}]}}`,
	})
	e.mustRun("link", src, "--consent")
	e.mustRun("sandbox", "slow")
	_, errOut, code := e.run("hook", "slow", "BeforeTool-1")
	if code == ExitOK || !strings.Contains(errOut, "the hook BeforeTool-1 of slow was stopped at its timeout, 300ms") {
		t.Errorf("a hook stopped at its timeout: exit %d\nstderr:\n%s", code, errOut)
	}
}
