package discovery

import (
	"context"
	"testing"
)

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
	tb := parseWindowsTable([]byte(`[
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
		if got := windowsIDEProcess(tb, tt.self); got != tt.want {
			t.Errorf("self %d: got %+v; want %+v", tt.self, got, tt.want)
		}
	}
	one := parseWindowsTable([]byte(`{"ProcessId":1,"ParentProcessId":0,"Name":"a","CommandLine":"a"}`))
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
		p, c := parsePSLine(tt.in)
		if p != tt.ppid || c != tt.cmd {
			t.Errorf("parsePSLine(%q) = %d, %q", tt.in, p, c)
		}
	}
	if n := programName("/Applications/Visual Studio Code.app/x"); n != "Visual" {
		t.Errorf("programName splits on the first space like the real client: %q", n)
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
