package discovery

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary plays the editor and its pty host when started with
// GEMKIT_DISCOVERY_HELPER set, so that a real process tree
// editor → pty host → shell → CLI can be built with real programs.
func TestMain(m *testing.M) {
	switch os.Getenv("GEMKIT_DISCOVERY_HELPER") {
	case "ide":
		// The editor starts its pty host and waits for it.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GEMKIT_DISCOVERY_HELPER=pty")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		_ = cmd.Run()
		os.Exit(0)
	case "pty":
		// The pty host runs the shell, which runs the "CLI" (sleep) in the
		// background and prints its pid.
		shell := os.Getenv("GEMKIT_DISCOVERY_SHELL")
		cmd := exec.Command(shell, "-c", `sleep 30 & echo $!; wait`)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		_ = cmd.Run()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startTree starts editor → pty host → shell → sleep and returns the pids
// of the editor and of the sleep.
func startTree(t *testing.T, shell string) (idePID, cliPID int) {
	t.Helper()
	path, err := exec.LookPath(shell)
	if err != nil {
		t.Fatalf("this test needs %s: %v", shell, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GEMKIT_DISCOVERY_HELPER=ide", "GEMKIT_DISCOVERY_SHELL="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		cliPID, err = strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			t.Fatalf("helper printed %q", s)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("process tree did not start")
	}
	// The shell forks before it execs sleep; wait for the exec so that the
	// leaf is the "CLI" and not a copy of the shell.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if _, c := ProcLookup(context.Background(), cliPID); strings.HasPrefix(c, "sleep") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sleep did not start")
		}
	}
	return cmd.Process.Pid, cliPID
}

func TestFindIDEProcessRealTree(t *testing.T) {
	for _, shell := range []string{"bash", "sh", "dash"} {
		t.Run(shell, func(t *testing.T) {
			idePID, cliPID := startTree(t, shell)
			noEnv := func(string) string { return "" }
			for name, lookup := range map[string]ProcessLookup{"proc": ProcLookup, "ps": PSLookup} {
				got := FindIDEProcess(context.Background(), FindOptions{Getenv: noEnv, SelfPID: cliPID, Lookup: lookup})
				if got.PID != idePID || got.Source != "shell" {
					t.Errorf("%s: FindIDEProcess = %+v; want pid %d (the shell's grandparent)", name, got, idePID)
				}
				if !strings.Contains(got.Command, os.Args[0]) {
					t.Errorf("%s: command %q does not name the editor %q", name, got.Command, os.Args[0])
				}
			}
		})
	}
}

func TestProcAndPSAgree(t *testing.T) {
	_, cliPID := startTree(t, "bash")
	ctx := context.Background()
	for pid := cliPID; pid > 1; {
		p1, c1 := ProcLookup(ctx, pid)
		p2, c2 := PSLookup(ctx, pid)
		if p1 != p2 || ProgramName(c1) != ProgramName(c2) {
			t.Fatalf("pid %d: /proc says (%d, %q), ps says (%d, %q)", pid, p1, c1, p2, c2)
		}
		pid = p1
	}
	if p, c := ProcLookup(ctx, 1<<30); p != 0 || c != "" {
		t.Errorf("missing process: got (%d, %q)", p, c)
	}
	if p, c := PSLookup(ctx, 1<<30); p != 0 || c != "" {
		t.Errorf("missing process via ps: got (%d, %q)", p, c)
	}
}

// table is a synthetic process table for the rules no real tree here can
// show (no shell at all, the depth bound, pid 1 as grandparent).
type table map[int]struct {
	ppid int
	cmd  string
}

func (tb table) lookup(_ context.Context, pid int) (int, string) {
	p, ok := tb[pid]
	if !ok {
		return 0, ""
	}
	return p.ppid, p.cmd
}

func TestFindIDEProcessRules(t *testing.T) {
	deep := table{}
	for i := 100; i < 200; i++ {
		deep[i] = struct {
			ppid int
			cmd  string
		}{i + 1, "node worker"}
	}
	tests := []struct {
		name string
		tb   table
		env  string
		want IDEProcess
	}{
		{"shell grandparent", table{10: {9, "gemini"}, 9: {8, "/bin/zsh -l"}, 8: {7, "ptyhost"}, 7: {1, "/usr/share/code/code"}},
			"", IDEProcess{7, "/usr/share/code/code", "shell"}},
		{"grandparent is init: parent", table{10: {9, "gemini"}, 9: {8, "fish"}, 8: {1, "tmux"}},
			"", IDEProcess{8, "tmux", "shell"}},
		{"login shell -bash is no shell", table{10: {9, "gemini"}, 9: {8, "-bash"}, 8: {1, "sshd: me"}},
			"", IDEProcess{8, "sshd: me", "top"}},
		{"no shell: top-most ancestor", table{10: {9, "gemini"}, 9: {8, "node"}, 8: {1, "systemd --user"}},
			"", IDEProcess{8, "systemd --user", "top"}},
		{"depth bound 32", deep, "", IDEProcess{132, "node worker", "top"}},
		{"env pid", table{10: {9, "gemini"}, 4242: {1, "idea"}}, "4242", IDEProcess{4242, "idea", "env"}},
		{"env pid parseInt prefix", table{10: {9, "gemini"}, 42: {1, "idea"}}, " 42abc", IDEProcess{42, "idea", "env"}},
		{"env pid not positive is ignored", table{10: {9, "gemini"}, 9: {1, "bash"}}, "0", IDEProcess{1, "", "shell"}},
		{"env pid garbage is ignored", table{10: {9, "bash"}, 9: {8, "x"}, 8: {3, "ide"}, 3: {1, "init"}}, "abc", IDEProcess{8, "ide", "shell"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self := 10
			if tt.name == "depth bound 32" {
				self = 100
			}
			got := FindIDEProcess(context.Background(), FindOptions{
				Getenv:  func(k string) string { return map[string]string{"GEMINI_CLI_IDE_PID": tt.env}[k] },
				SelfPID: self,
				Lookup:  tt.tb.lookup,
			})
			if got != tt.want {
				t.Errorf("got %+v; want %+v", got, tt.want)
			}
		})
	}
}

func TestWindowsIDEProcess(t *testing.T) {
	// System(4) → services → explorer(300) → Code(400) → ptyhost(500) →
	// pwsh(600) → gemini(700). The IDE is three levels below the root.
	tb := ParseWindowsTable([]byte(`[
		{"ProcessId":4,"ParentProcessId":0,"Name":"System","CommandLine":null},
		{"ProcessId":300,"ParentProcessId":4,"Name":"explorer.exe","CommandLine":"explorer"},
		{"ProcessId":400,"ParentProcessId":300,"Name":"Code.exe","CommandLine":"Code.exe"},
		{"ProcessId":500,"ParentProcessId":400,"Name":"Code.exe","CommandLine":"Code.exe --type=ptyHost"},
		{"ProcessId":600,"ParentProcessId":500,"Name":"pwsh.exe","CommandLine":"pwsh"},
		{"ProcessId":700,"ParentProcessId":600,"Name":"node.exe","CommandLine":"node gemini"},
		{"Name":"no pid"}]`))
	if len(tb) != 6 {
		t.Fatalf("table has %d rows", len(tb))
	}
	tests := []struct {
		self int
		want IDEProcess
	}{
		{700, IDEProcess{400, "Code.exe", "table"}},
		{300, IDEProcess{4, "", "top"}},
		{4, IDEProcess{4, "", "top"}},
		{999, IDEProcess{999, "", "top"}},
	}
	for _, tt := range tests {
		if got := WindowsIDEProcess(tb, tt.self); got != tt.want {
			t.Errorf("self %d: got %+v; want %+v", tt.self, got, tt.want)
		}
	}
	one := ParseWindowsTable([]byte(`{"ProcessId":1,"ParentProcessId":0,"Name":"a","CommandLine":"a"}`))
	if len(one) != 1 {
		t.Errorf("single object: %v", one)
	}
}

func TestParsePSLine(t *testing.T) {
	tests := []struct {
		in   string
		ppid int
		cmd  string
	}{
		{"  123 /bin/bash --login\n", 123, "/bin/bash --login"},
		{"", 0, ""},
		{"x foo", 1, "foo"},
		{"1 /Applications/Visual Studio Code.app/Contents/MacOS/Electron", 1, "/Applications/Visual Studio Code.app/Contents/MacOS/Electron"},
	}
	for _, tt := range tests {
		p, c := ParsePSLine(tt.in)
		if p != tt.ppid || c != tt.cmd {
			t.Errorf("ParsePSLine(%q) = %d, %q", tt.in, p, c)
		}
	}
	if n := ProgramName("/Applications/Visual Studio Code.app/x"); n != "Visual" {
		t.Errorf("ProgramName splits on the first space like the real client: %q", n)
	}
	for in, want := range map[string]int{"42": 42, " +7x": 7, "-3": -3} {
		if n, ok := ParseJSInt(in); !ok || n != want {
			t.Errorf("ParseJSInt(%q) = %d, %v", in, n, ok)
		}
	}
	if _, ok := ParseJSInt("x1"); ok {
		t.Error("ParseJSInt(x1) ok")
	}
}
