//go:build linux

package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/proc"
)

// The memory of the process trees each server leaves behind (RSS and
// PSS, from /proc through internal/proc), and the processes left once
// the agents have gone.

// process is one process of the machine.
type process struct {
	pid, ppid int
	comm, cwd string
	cmdline   string // its arguments, each ended by a NUL
	rss, pss  int64  // bytes
}

func allProcs() []process {
	pids, _ := proc.Pids()
	var out []process
	for _, pid := range pids {
		st, err := proc.ReadStat(pid)
		if err != nil || st.State == 'Z' {
			continue
		}
		cwd, _ := proc.Cwd(pid)
		args, _ := proc.Cmdline(pid)
		cmdline := ""
		for _, a := range args {
			cmdline += a + "\x00"
		}
		out = append(out, process{pid: pid, ppid: st.PPid, comm: st.Comm, cwd: cwd, cmdline: cmdline})
	}
	return out
}

// memOf reads a process's RSS and PSS.
func memOf(pid int) (rss, pss int64) {
	m, _ := proc.MemoryOf(pid)
	return m.RSS, m.PSS
}

// tree is roots and every process below them.
func tree(roots []int) []process {
	all := allProcs()
	in := map[int]bool{}
	for _, r := range roots {
		in[r] = true
	}
	for changed := true; changed; {
		changed = false
		for _, p := range all {
			if !in[p.pid] && in[p.ppid] {
				in[p.pid] = true
				changed = true
			}
		}
	}
	var out []process
	for _, p := range all {
		if in[p.pid] {
			p.rss, p.pss = memOf(p.pid)
			out = append(out, p)
		}
	}
	return out
}

type memFigure struct {
	rss, pss int64
	procs    int
	servers  int // gopls processes (not counting gopls's telemetry child)
}

func figure(ps []process) memFigure {
	var m memFigure
	for _, p := range ps {
		m.rss += p.rss
		m.pss += p.pss
		m.procs++
		if p.comm == "gopls" && !strings.Contains(p.cmdline, "telemetry") {
			m.servers++
		}
	}
	return m
}

// memory starts 1, 2 and 4 agents' servers in the workspace, has each
// ask one question, and sums the memory of their process trees (gemkit's
// broker's with them).
func (e *env) memory(res *results) error {
	res.mem = map[string][3]memFigure{}
	for _, which := range []string{"gemkit", "cclsp"} {
		var figs [3]memFigure
		for i, agents := range []int{1, 2, 4} {
			var ss []*server
			for range agents {
				var s *server
				var err error
				if which == "gemkit" {
					s, err = e.startGemkit()
				} else {
					s, err = e.startCclsp()
				}
				if err != nil {
					return err
				}
				ss = append(ss, s)
			}
			for _, s := range ss {
				var text string
				if which == "gemkit" {
					text, _ = s.call("code_references", gemkitRefsByPos)
				} else {
					text, _ = s.call("find_references", cclspRefs)
				}
				if text == "" {
					return fmt.Errorf("%s answered nothing", which)
				}
			}
			// Let the collectors and gopls settle after the answers, then
			// take the median of five samples half a second apart (a Go
			// heap swings with its collections).
			time.Sleep(2 * time.Second)
			var roots []int
			for _, s := range ss {
				roots = append(roots, s.Cmd.Process.Pid)
			}
			if which == "gemkit" {
				roots = append(roots, e.brokers()...)
			}
			var samples []memFigure
			var procs []process
			for k := range 5 {
				if k > 0 {
					time.Sleep(500 * time.Millisecond)
				}
				procs = tree(roots)
				samples = append(samples, figure(procs))
			}
			slices.SortFunc(samples, func(a, b memFigure) int { return int(a.rss - b.rss) })
			figs[i] = samples[len(samples)/2]
			pids := make([]int, len(procs))
			for j, p := range procs {
				pids[j] = p.pid
			}
			// The agents go: each closes its server's stdin, and the
			// processes still running 10 s later are counted (then
			// ended).
			for _, s := range ss {
				s.CloseStdin()
			}
			left := waitGone(pids, 10*time.Second)
			for _, s := range ss {
				s.Close()
			}
			if agents == 2 {
				if which == "gemkit" {
					res.gemkitLeft, res.gemkitLeftWhat = len(left), describe(left)
				} else {
					res.cclspLeft, res.cclspLeftWhat = len(left), describe(left)
				}
			}
			for _, p := range left {
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
			if which == "gemkit" {
				if err := e.waitNoBroker(); err != nil {
					return err
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
		res.mem[which] = figs
	}
	return nil
}

// waitGone waits up to max for the processes to end, and returns those
// still running.
func waitGone(pids []int, max time.Duration) []process {
	deadline := time.Now().Add(max)
	for {
		var left []process
		all := allProcs()
		for _, p := range all {
			if slices.Contains(pids, p.pid) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describe(ps []process) string {
	count := map[string]int{}
	for _, p := range ps {
		name := p.comm
		if name == "gopls" && strings.Contains(p.cmdline, "telemetry") {
			name = "gopls telemetry"
		}
		count[name]++
	}
	var parts []string
	for k, v := range count {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
