package discovery

import (
	"context"
	"strings"

	"github.com/gemkit/gemkit/internal/proc"
)

func platformLookup() ProcessLookup { return procLookup }

func platformFind(context.Context, int) (IDEProcess, bool) { return IDEProcess{}, false }

// procLookup reads a process from /proc (internal/proc), giving what `ps
// -o ppid=,command=` prints without starting a process per level: the
// parent pid and the arguments joined by spaces ("[comm]" when there are
// none, as for a kernel thread).
func procLookup(_ context.Context, pid int) (ppid int, command string) {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return 0, ""
	}
	args, err := proc.Cmdline(pid)
	if err != nil {
		return st.PPid, ""
	}
	if len(args) == 0 {
		return st.PPid, "[" + st.Comm + "]"
	}
	return st.PPid, strings.Join(args, " ")
}
