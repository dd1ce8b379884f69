//go:build linux

package main

import (
	"fmt"
	"github.com/gemkit/gemkit/bench/internal/paired"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/proc"
)

// row is the layout of the table's lines.
const row = "%-40s %14s %14s %14s %14s %14s\n"

// printTable prints each side's medians, then what each costs over bare
// and gemkit's cost less each peer's.
func (r *results) printTable(sides []side, at sideIndex) {
	warm, listed, cold, coldCPU := r.warm, r.listed, r.cold, r.coldCPU
	relayAt, pollAt, pollSidAt, refAt, peerFirst, npxFirst := at.relayAt, at.pollAt, at.pollSidAt, at.refAt, at.peerFirst, at.npxFirst
	fmt.Println("first list: from the spawn to the answer of initialize and then of a tools/list that holds the tool; cold start: to the answer of the first tools/call after it")
	fmt.Printf(row, "", "call p50", "call p90", "first list p50", "cold start p50", "start CPU p50")
	for i, s := range sides {
		fmt.Printf(row, s.name, paired.Ms(paired.Pct(warm[i], 50)), paired.Ms(paired.Pct(warm[i], 90)), paired.Ms(paired.Pct(listed[i], 50)), paired.Ms(paired.Pct(cold[i], 50)), paired.Ms(paired.Pct(coldCPU[i], 50)))
	}
	cost := func(name string, i int) {
		fmt.Printf(row, name, paired.Ms(paired.Pct(warm[i], 50)-paired.Pct(warm[1], 50)), "", paired.Ms(paired.Pct(listed[i], 50)-paired.Pct(listed[1], 50)), paired.Ms(paired.Pct(cold[i], 50)-paired.Pct(cold[1], 50)), paired.Ms(paired.Pct(coldCPU[i], 50)-paired.Pct(coldCPU[1], 50)))
	}
	cost("gemkit's cost", 0)
	cost("a byte copier's cost", 2)
	if relayAt >= 0 {
		cost("a C relay's cost", relayAt)
	}
	cost("a Go relay in the poller's cost", pollAt)
	cost("a Go relay, own session: cost", pollSidAt)
	if refAt >= 0 {
		cost("the reference's cost", refAt)
	}
	for i := peerFirst; i < npxFirst; i++ {
		cost(sides[i].name+": cost", i)
	}
	for i := peerFirst; i < npxFirst; i++ {
		fmt.Printf(row, "gemkit's cost − "+sides[i].name[len("under "):]+"'s", paired.Ms(paired.Pct(warm[0], 50)-paired.Pct(warm[i], 50)), "",
			paired.Ms(paired.Pct(listed[0], 50)-paired.Pct(listed[i], 50)), paired.Ms(paired.Pct(cold[0], 50)-paired.Pct(cold[i], 50)), paired.Ms(paired.Pct(coldCPU[0], 50)-paired.Pct(coldCPU[i], 50)))
	}
}

// printPaired prints the costs paired by round.
func (r *results) printPaired(sides []side, at sideIndex) {
	warm, cold, coldCPU := r.warm, r.cold, r.coldCPU
	relayAt, pollAt, pollSidAt, refAt, peerFirst, npxFirst := at.relayAt, at.pollAt, at.pollSidAt, at.refAt, at.peerFirst, at.npxFirst
	// The same costs paired by round: each round's difference, then
	// their median, with the range that holds the true median with 95%
	// confidence (order statistics of the differences). A difference of
	// two medians taken over a run whose load drifts mixes the drift
	// into the cost; a round's sides ran within seconds of each other.
	fmt.Println("paired by round: the median of the rounds' differences [95% confidence range of that median]")
	paired := func(name string, a, b int) {
		fmt.Printf("%-40s call %s   cold start %s   start CPU %s\n", name,
			paired.MedianCI(paired.Diffs(warm[a], warm[b])), paired.MedianCI(paired.Diffs(cold[a], cold[b])), paired.MedianCI(paired.Diffs(coldCPU[a], coldCPU[b])))
	}
	paired("gemkit over bare", 0, 1)
	paired("a byte copier over bare", 2, 1)
	if relayAt >= 0 {
		paired("a C relay over bare", relayAt, 1)
		paired("gemkit over a C relay", 0, relayAt)
	}
	paired("a Go relay in the poller over bare", pollAt, 1)
	paired("gemkit over a Go relay in the poller", 0, pollAt)
	paired("a Go relay, own session, over bare", pollSidAt, 1)
	paired("the same over the relay", pollSidAt, pollAt)
	paired("gemkit over a Go relay, own session", 0, pollSidAt)
	if refAt >= 0 {
		paired("the reference over bare", refAt, 1)
		paired("gemkit over the reference", 0, refAt)
	}
	for i := peerFirst; i < npxFirst; i++ {
		paired(sides[i].name[len("under "):]+" over bare", i, 1)
	}
	for i := peerFirst; i < npxFirst; i++ {
		// Issue 45's targets: gemkit's cold start at most 10 ms more over
		// bare than bubblewrap's (bare cancels in a round: gemkit's start
		// less bubblewrap's); a call at most 0.1 ms over bare.
		paired("gemkit over "+sides[i].name[len("under "):], 0, i)
	}
	for i := peerFirst; i < npxFirst; i++ {
		// What one Go program in the path costs against the peer, on
		// this machine and in this run: a floor beneath gemkit's, which
		// starts two (itself and its sandbox child).
		paired("a Go relay in the poller over "+sides[i].name[len("under "):], pollAt, i)
	}
}

// printNPX prints the npx sides' costs against the pinned package run
// bare from its tree, when they ran, then the CPU per call and the
// targets.
func (r *results) printNPX(sides []side, at sideIndex, npx *npxSetup) {
	warm, listed, cold, coldCPU, cpuPerCall := r.warm, r.listed, r.cold, r.coldCPU, r.cpuPerCall
	npxFirst := at.npxFirst
	if npx == nil {
		printCPU(sides, cpuPerCall)
		fmt.Println("targets (issue 45): a call at most 0.1 ms over bare at p50; a cold start at most 10 ms more over bare than bubblewrap's (gemkit over bubblewrap, paired)")
		return
	}
	// The npx sides, against the pinned package run bare from its tree.
	bareNPX := npxFirst + 1
	costVs := func(name string, i int) {
		fmt.Printf(row, name, paired.Ms(paired.Pct(warm[i], 50)-paired.Pct(warm[bareNPX], 50)), "", paired.Ms(paired.Pct(listed[i], 50)-paired.Pct(listed[bareNPX], 50)), paired.Ms(paired.Pct(cold[i], 50)-paired.Pct(cold[bareNPX], 50)), paired.Ms(paired.Pct(coldCPU[i], 50)-paired.Pct(coldCPU[bareNPX], 50)))
	}
	costVs("npx pinned: gemkit's cost", npxFirst)
	costVs("npx itself: its cost", npxFirst+2)
	printCPU(sides, cpuPerCall)
	fmt.Println("targets (issue 45): a call at most 0.1 ms over bare at p50; a cold start at most 10 ms more over bare than bubblewrap's (gemkit over bubblewrap, paired)")
	fmt.Printf("npx: %s\n", npx.pinned)
}

// printCPU prints the CPU time per call of the processes on the client's
// side of the pipe (gemkit's own, the copier, bwrap's or srt's outer
// process), which the machine's load does not inflate as it inflates the
// time of a call.
func printCPU(sides []side, cpuPerCall []time.Duration) {
	for i, s := range sides {
		who := "the process started"
		if strings.Contains(s.name, "gemkit") || strings.Contains(s.name, "reference") {
			who = "the gemkit process"
		} else if s.name == "bare" || strings.HasPrefix(s.name, "npx package") {
			who = "the server (node)"
		}
		fmt.Printf("CPU per call of %s, %s: %.1f µs\n", who, s.name, float64(cpuPerCall[i])/float64(time.Microsecond))
	}
}

// cpuTime is the time on CPU of every thread of the process pid.
func cpuTime(pid int) time.Duration {
	d, _ := proc.CPUTime(pid)
	return d
}

func loadavg() string {
	l, err := proc.LoadAverage()
	if err != nil {
		return "?"
	}
	return l
}
