package discovery

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
)

func platformLookup() ProcessLookup { return procLookup }

func platformFind(context.Context, int) (IDEProcess, bool) { return IDEProcess{}, false }

// procLookup reads a process from /proc, giving what `ps -o
// ppid=,command=` prints without starting a process per level: the parent
// pid from /proc/PID/stat and the arguments from /proc/PID/cmdline joined
// by spaces ("[comm]" when there are none, as for a kernel thread).
func procLookup(_ context.Context, pid int) (ppid int, command string) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0, ""
	}
	// The command name in parentheses may itself hold ") ", so the fields
	// start after the last one.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return 0, ""
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 2 {
		return 0, ""
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		ppid = 1
	}
	cmdline, err := os.ReadFile(dir + "/cmdline")
	if err != nil {
		return ppid, ""
	}
	cmdline = bytes.TrimRight(cmdline, "\x00")
	if len(cmdline) == 0 {
		return ppid, "[" + string(stat[open+1:end]) + "]"
	}
	return ppid, string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
}
