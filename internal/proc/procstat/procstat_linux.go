package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Read reads /proc/PID/stat. The command's name, in parentheses, may
// itself hold spaces and ") ", so the fields are counted from the last
// parenthesis.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return Parse(b)
}

// Parse parses the text of a /proc/PID/stat.
func Parse(b []byte) (Stat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Stat{}, errors.New("proc: malformed stat")
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return Stat{}, errors.New("proc: malformed stat")
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, fmt.Errorf("proc: malformed stat: %w", err)
	}
	st := Stat{Comm: string(b[open+1 : end]), State: f[0][0], PPid: ppid}
	// utime, stime, cutime, cstime (fields 14 to 17) and starttime (22),
	// counted after the name; USER_HZ is 100 wherever Linux runs.
	if len(f) >= 20 {
		for _, k := range f[11:15] {
			v, _ := strconv.ParseInt(k, 10, 64)
			st.CPU += time.Duration(v) * 10 * time.Millisecond
		}
		st.Start, _ = strconv.ParseUint(f[19], 10, 64)
	}
	return st, nil
}
