//go:build linux

package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// perfRounds counts the CPU time of starts cold starts of each side,
// in rounds of one of each in an order drawn from order, each under
// perf stat.
func perfRounds(sides []side, starts int, order *rand.Rand, perf, out string) ([][]time.Duration, error) {
	cpu := make([][]time.Duration, len(sides))
	for range starts {
		for _, i := range order.Perm(len(sides)) {
			s := sides[i]
			if _, _, _, err := coldStart(underPerf(s, perf, out)); err != nil {
				return nil, fmt.Errorf("%s: cold start under perf stat: %w", s.name, err)
			}
			d, err := taskClock(out)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			cpu[i] = append(cpu[i], d)
		}
	}
	return cpu, nil
}

// underPerf is s started under `perf stat`, which writes the task-clock
// of all the processes it starts to out.
func underPerf(s side, perf, out string) side {
	inner := s.cmd
	s.cmd = func() *exec.Cmd {
		c := inner()
		w := exec.Command(perf, append([]string{"stat", "-x,", "-o", out, "-e", "task-clock", "--", c.Path}, c.Args[1:]...)...)
		w.Dir, w.Env = c.Dir, c.Env
		return w
	}
	return s
}

// taskClock reads the task-clock perf stat -x, wrote to file.
func taskClock(file string) (time.Duration, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ",")
		if len(f) > 2 && strings.HasPrefix(f[2], "task-clock") {
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return 0, fmt.Errorf("perf stat said %q", line)
			}
			return time.Duration(v * float64(time.Millisecond)), nil
		}
	}
	return 0, fmt.Errorf("perf stat counted no task-clock: %s", b)
}
