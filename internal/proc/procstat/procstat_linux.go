package procstat

import (
	"errors"
	"os"
	"strconv"
	"time"
)

// The package imports no bytes, strings or fmt: their imports (unicode's
// tables, reflect) would make package hookclient, which reads the
// session's stat in its init, wait for most of the standard library's
// initialisation (see hookclient's init).

// Read reads /proc/PID/stat. The command's name, in parentheses, may
// itself hold spaces and ") ", so the fields are counted from the last
// parenthesis.
func Read(pid int) (Stat, error) {
	return read("/proc/" + strconv.Itoa(pid) + "/stat")
}

// ReadSelf reads /proc/self/stat: the calling process's, also where its
// pid in its own PID namespace is not its pid in /proc's.
func ReadSelf() (Stat, error) { return read("/proc/self/stat") }

func read(path string) (Stat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	return Parse(b)
}

// Parse parses the text of a /proc/PID/stat.
func Parse(b []byte) (Stat, error) {
	open, end := -1, -1
	for i, c := range b {
		if c == '(' && open < 0 {
			open = i
		}
		if c == ')' {
			end = i
		}
	}
	if open < 0 || end < open {
		return Stat{}, errors.New("proc: malformed stat")
	}
	f := fields(b[end+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return Stat{}, errors.New("proc: malformed stat")
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, malformedError{err}
	}
	st := Stat{Comm: string(b[open+1 : end]), State: f[0][0], PPid: ppid}
	if len(f) >= 5 {
		// tty_nr, after pgrp and session.
		st.Tty, _ = strconv.Atoi(f[4])
	}
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

// fields are the words of b, between spaces, tabs and newlines (what
// the kernel writes between a stat's fields).
func fields(b []byte) []string {
	var f []string
	start := -1
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == ' ' || b[i] == '\n' || b[i] == '\t' {
			if start >= 0 {
				f = append(f, string(b[start:i]))
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return f
}

// malformedError is a field of a stat that does not parse.
type malformedError struct{ err error }

func (e malformedError) Error() string { return "proc: malformed stat: " + e.err.Error() }
func (e malformedError) Unwrap() error { return e.err }
