//go:build linux

package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// What a run measured, and how it is printed side by side.

// results are the figures of one run, by server and question.
type results struct {
	gemkitStart, cclspStart         []time.Duration
	refStart, refDefPos, refDefName []time.Duration // -ref
	gemkitDefPos, gemkitDefName     []time.Duration
	gemkitRefs, cclspDef, cclspRefs []time.Duration
	gemkitFew, cclspFew, goplsFew   []time.Duration
	gemkitPing, cclspPing           []time.Duration
	goplsDef, goplsRefs             []time.Duration
	gemkitHover, gemkitHoverName    []time.Duration
	gemkitImpl, gemkitImplName      []time.Duration
	cclspHover, cclspImpl           []time.Duration
	goplsHover, goplsImpl           []time.Duration
	mem                             map[string][3]memFigure // "gemkit", "cclsp" → 1, 2, 4 agents
	faults                          [][3]string
	gemkitLeft, cclspLeft           int
	gemkitLeftWhat, cclspLeftWhat   string
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func p50(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func (r *results) print() {
	fmt.Printf("%-58s %-22s %-22s\n", "", "gemkit", "cclsp 0.7.0")
	row := func(name, a, b string) { fmt.Printf("%-58s %-22s %-22s\n", name, a, b) }
	row("start → first correct definition (median)", ms(p50(r.gemkitStart)), ms(p50(r.cclspStart)))
	row("warm definition p50, by position (gemkit) / in the declaring file (cclsp)", ms(p50(r.gemkitDefPos)), ms(p50(r.cclspDef)))
	row("warm definition p50, by name from a call site", ms(p50(r.gemkitDefName)), "(cannot: see below)")
	row("warm references p50, 2 uses (Store.Total)", ms(p50(r.gemkitFew)), ms(p50(r.cclspFew)))
	row("warm references p50, 1,000 uses (greet.Greet)", ms(p50(r.gemkitRefs)), ms(p50(r.cclspRefs)))
	row("  gopls's own definition p50 (asked directly)", ms(p50(r.goplsDef)), "")
	row("  gopls's own references p50, 2 uses", ms(p50(r.goplsFew)), "")
	row("  gopls's own references p50, 1,000 uses", ms(p50(r.goplsRefs)), "")
	row("  MCP round trip p50 (ping): the agent's hop to any server", ms(p50(r.gemkitPing)), ms(p50(r.cclspPing)))
	over := func(a, b []time.Duration) string {
		d := p50(a) - p50(b)
		return fmt.Sprintf("%s (%s beyond ping)", ms(d), ms(d-p50(r.gemkitPing)))
	}
	row("  gemkit's own time over gopls's: definition", over(r.gemkitDefPos, r.goplsDef), "")
	row("  gemkit's own time over gopls's: references, 2 uses", over(r.gemkitFew, r.goplsFew), "")
	row("  gemkit's own time over gopls's: references, 1,000 uses", over(r.gemkitRefs, r.goplsRefs), "")
	row("warm hover p50, by position", ms(p50(r.gemkitHover)), ms(p50(r.cclspHover)))
	row("warm hover p50, by name in the declaring file", ms(p50(r.gemkitHoverName)), "(cannot)")
	row("  gopls's own hover p50 (asked directly)", ms(p50(r.goplsHover)), "")
	row("  gemkit's own time over gopls's: hover by position", over(r.gemkitHover, r.goplsHover), "")
	row("warm implementations p50, by position", ms(p50(r.gemkitImpl)), ms(p50(r.cclspImpl)))
	row("warm implementations p50, by name in the declaring file", ms(p50(r.gemkitImplName)), "(cannot)")
	row("  gopls's own implementations p50 (asked directly)", ms(p50(r.goplsImpl)), "")
	row("  gemkit's own time over gopls's: implementations by position", over(r.gemkitImpl, r.goplsImpl), "")
	for i, agents := range []int{1, 2, 4} {
		g, c := r.mem["gemkit"][i], r.mem["cclsp"][i]
		row(fmt.Sprintf("memory, %d %s: RSS sum / PSS sum", agents, map[bool]string{true: "agent", false: "agents"}[agents == 1]),
			mib(g.rss)+" / "+mib(g.pss), mib(c.rss)+" / "+mib(c.pss))
		row(fmt.Sprintf("  processes / gopls running, %d %s", agents, map[bool]string{true: "agent", false: "agents"}[agents == 1]),
			fmt.Sprintf("%d / %d", g.procs, g.servers), fmt.Sprintf("%d / %d", c.procs, c.servers))
	}
	if len(r.refStart) > 0 {
		row("reference gemkit (-ref): start → first correct definition (median)", ms(p50(r.refStart)), "")
		row("reference gemkit (-ref): warm definition p50, by position", ms(p50(r.refDefPos)), "")
		row("reference gemkit (-ref): warm definition p50, by name", ms(p50(r.refDefName)), "")
		row("  gemkit − reference: start / by position / by name", ms(p50(r.gemkitStart)-p50(r.refStart))+" / "+
			ms(p50(r.gemkitDefPos)-p50(r.refDefPos))+" / "+ms(p50(r.gemkitDefName)-p50(r.refDefName)), "")
	}
	row("left running 10 s after 2 agents closed stdin", fmt.Sprintf("%d %s", r.gemkitLeft, r.gemkitLeftWhat), fmt.Sprintf("%d %s", r.cclspLeft, r.cclspLeftWhat))
	fmt.Println()
	for _, f := range r.faults {
		fmt.Printf("%s\n  gemkit: %s\n  cclsp:  %s\n", f[0], f[1], f[2])
	}
}
