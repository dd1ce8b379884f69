package discovery

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/ide"
)

// maxTraversalDepth bounds the walk up the process tree, as in the real
// client.
const maxTraversalDepth = 32

// shells are the program names the real client (getIdeProcessInfo in
// gemini-cli 0.61.0 packages/core/src/ide/process-utils.ts) takes for the
// terminal's shell when it walks up from its own process. A login shell whose
// argv[0] is "-bash" is not one of them, exactly as in the real client.
var shells = []string{"zsh", "bash", "sh", "tcsh", "csh", "ksh", "fish", "dash"}

// IDEProcess is the editor process a CLI believes it runs in; its pid is
// the one a discovery file's name must carry to be preferred.
type IDEProcess struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	// Source says how the pid was found.
	Source ProcessSource `json:"source"`
}

// ProcessSource says how FindIDEProcess found the editor's pid.
type ProcessSource string

// How the editor's pid was found.
const (
	PIDFromEnv    ProcessSource = "env"   // GEMINI_CLI_IDE_PID
	PIDAboveShell ProcessSource = "shell" // the grandparent (or parent) of the first shell ancestor
	PIDFromTable  ProcessSource = "table" // Windows: three levels below the root of the process chain
	PIDTopmost    ProcessSource = "top"   // no shell found: the top-most ancestor reached
)

// ProcessLookup returns the parent pid and the full command line of pid.
// Like `ps -o ppid=,command=`, it returns 0 and "" when the process cannot
// be read.
type ProcessLookup func(ctx context.Context, pid int) (ppid int, command string)

// FindOptions configure FindIDEProcess; the zero value inspects this
// process on this machine.
type FindOptions struct {
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// SelfPID is where the walk starts; 0 means os.Getpid().
	SelfPID int
	// Lookup reads one process; nil means the platform's way (/proc on
	// Linux, ps on other Unixes).
	Lookup ProcessLookup
}

// FindIDEProcess finds the editor process this CLI runs in, with the real
// client's rules: GEMINI_CLI_IDE_PID when it is a positive integer;
// otherwise a walk up the process tree to the first shell, whose
// grandparent (when > 1) or parent is the IDE; otherwise the top-most
// ancestor reached within 32 levels. On Windows the real client reads the
// whole process table instead: the editor is the ancestor three levels
// below the root of the chain.
func FindIDEProcess(ctx context.Context, o FindOptions) IDEProcess {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	lookup := o.Lookup
	if lookup == nil {
		lookup = platformLookup()
	}
	self := o.SelfPID
	if self == 0 {
		self = os.Getpid()
	}
	if v := getenv(ide.EnvPID); v != "" {
		if pid, ok := ParseJSInt(v); ok && pid > 0 {
			_, cmd := lookup(ctx, pid)
			return IDEProcess{PID: pid, Command: cmd, Source: PIDFromEnv}
		}
	}
	if p, ok := platformFind(ctx, self); ok {
		return p
	}
	return walkUnix(ctx, self, lookup)
}

// walkUnix is the real client's Unix walk (getIdeProcessInfoForUnix in
// gemini-cli 0.61.0 packages/core/src/ide/process-utils.ts).
func walkUnix(ctx context.Context, self int, lookup ProcessLookup) IDEProcess {
	cur := self
	for range maxTraversalDepth {
		if ctx.Err() != nil {
			break
		}
		ppid, cmd := lookup(ctx, cur)
		if isShell(programName(cmd)) {
			idePID := ppid
			if gp, _ := lookup(ctx, ppid); gp > 1 {
				idePID = gp
			}
			_, ideCmd := lookup(ctx, idePID)
			return IDEProcess{PID: idePID, Command: ideCmd, Source: PIDAboveShell}
		}
		if ppid <= 1 {
			break
		}
		cur = ppid
	}
	_, cmd := lookup(ctx, cur)
	return IDEProcess{PID: cur, Command: cmd, Source: PIDTopmost}
}

func isShell(name string) bool {
	for _, s := range shells {
		if name == s {
			return true
		}
	}
	return false
}

// programName is what the real client compares with the shell list
// (getIdeProcessInfoForUnix in gemini-cli 0.61.0
// packages/core/src/ide/process-utils.ts): the base name of the command
// line's first space-separated word.
func programName(command string) string {
	first, _, _ := strings.Cut(command, " ")
	if first == "" {
		return ""
	}
	return filepath.Base(first)
}

// parsePSLine parses one line of `ps -o ppid=,command=` output the way the
// real client does (getProcessInfo in gemini-cli 0.61.0
// packages/core/src/ide/process-utils.ts): the first field is the parent pid
// (1 when it is not a number), the rest is the command. An empty line means
// the process is gone: 0 and "".
func parsePSLine(out string) (ppid int, command string) {
	out = strings.TrimSpace(out)
	if out == "" {
		return 0, ""
	}
	field := strings.Fields(out)[0]
	command = strings.TrimSpace(out[len(field):])
	n, ok := ParseJSInt(field)
	if !ok {
		return 1, command
	}
	return n, command
}

// ParseJSInt reads a decimal integer the way JavaScript's parseInt(s, 10)
// does: leading white space and a sign are allowed, and the digits end at
// the first other character. ok is false when there are no digits.
func ParseJSInt(s string) (int, bool) {
	s = strings.TrimLeft(s, " \t\n\r\v\f")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	n, digits := 0, 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			break
		}
		// JavaScript's numbers are exact to 2^53; an int of 32 bits
		// stops sooner, and a number past either is no process ID.
		if n > min(1<<53, math.MaxInt-9)/10 {
			return 0, false
		}
		n = n*10 + int(c-'0')
		digits++
	}
	if digits == 0 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// windowsProcess is one row of the Windows process table.
type windowsProcess struct {
	PID, PPID int
	Name      string
	Command   string
}

// windowsIDEProcess applies the real client's Windows rule
// (getIdeProcessInfoForWindows in gemini-cli 0.61.0
// packages/core/src/ide/process-utils.ts) to a snapshot of the process table:
// walk up from self (at most maxTraversalDepth entries) until a process whose
// parent is 0 or absent; the IDE is the ancestor three levels below that root
// (or the root itself when the chain is shorter). It is a pure function so
// that it is tested anywhere.
func windowsIDEProcess(table map[int]windowsProcess, self int) IDEProcess {
	me, ok := table[self]
	if !ok {
		return IDEProcess{PID: self, Source: PIDTopmost}
	}
	var chain []windowsProcess
	cur, have := me, true
	for i := 0; i < maxTraversalDepth && have; i++ {
		chain = append(chain, cur)
		if cur.PPID == 0 {
			break
		}
		cur, have = table[cur.PPID]
	}
	if len(chain) >= 3 {
		t := chain[len(chain)-3]
		return IDEProcess{PID: t.PID, Command: t.Command, Source: PIDFromTable}
	}
	t := chain[len(chain)-1]
	return IDEProcess{PID: t.PID, Command: t.Command, Source: PIDTopmost}
}

// parseWindowsTable reads the JSON PowerShell prints for Win32_Process (one
// object or an array of them) into a table keyed by pid. Rows without a
// numeric ProcessId are skipped, as in the real client
// (getProcessTableWindows in gemini-cli 0.61.0
// packages/core/src/ide/process-utils.ts).
func parseWindowsTable(out []byte) map[int]windowsProcess {
	table := map[int]windowsProcess{}
	type row struct {
		ProcessID       *float64 `json:"ProcessId"`
		ParentProcessID float64  `json:"ParentProcessId"`
		Name            string   `json:"Name"`
		CommandLine     string   `json:"CommandLine"`
	}
	var rows []row
	if err := json.Unmarshal(out, &rows); err != nil {
		var one row
		if err := json.Unmarshal(out, &one); err != nil {
			return table
		}
		rows = []row{one}
	}
	for _, r := range rows {
		if r.ProcessID == nil {
			continue
		}
		pid := int(*r.ProcessID)
		table[pid] = windowsProcess{PID: pid, PPID: int(r.ParentProcessID), Name: r.Name, Command: r.CommandLine}
	}
	return table
}
