//go:build linux

package main

// Issue 47's questions, answered from a run's figures, and the load
// average through the run.

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/proc"
)

// verdicts prints whether a's connect (claude start → connected) is at or
// below b's, and a's openDiff → diff drawn at or below b's + 1 ms.
//
// The connect's answer is the turn-by-turn comparison's, not the p50s':
// a start of Claude Code spreads by hundreds of milliseconds from one
// start to the next, with either plugin, so two p50s of 20 starts differ
// by tens of milliseconds when nothing differs. YES when the 95% interval
// of the turn-by-turn median difference lies at or below 0 (a sooner), NO
// when it lies above 0 (a later), NOT SHOWN when it holds 0: the run
// cannot tell the two apart, and the line says by how much a may be later
// at most. The p50s are printed beside it.
func verdicts(out io.Writer, aName string, a result, bName string, b result) {
	if len(a.connected) > 0 && len(b.connected) > 0 {
		diff, sooner, pairs := paired(a.connected, b.connected)
		lo, hi, ok := medianInterval(differences(a.connected, b.connected))
		var answer string
		switch {
		case !ok:
			answer = fmt.Sprintf("NOT SHOWN: %d turns are too few for a 95%% interval of the turn-by-turn median (6 at least)", pairs)
		case hi <= 0:
			answer = fmt.Sprintf("YES: %s sooner, turn by turn in [%+.0f, %+.0f] ms (95%%, sign test)", aName, ms(lo), ms(hi))
		case lo > 0:
			answer = fmt.Sprintf("NO: %s later, turn by turn in [%+.0f, %+.0f] ms (95%%, sign test)", aName, ms(lo), ms(hi))
		default:
			answer = fmt.Sprintf("NOT SHOWN: no difference the run can tell, turn by turn in [%+.0f, %+.0f] ms (95%%, sign test): %s later by %.0f ms at most", ms(lo), ms(hi), aName, ms(hi))
		}
		fmt.Fprintf(out, "connect ≤ %s's? %s; turn by turn, %s − %s median %+.0f ms, %s sooner in %d of %d turns; claude start → connected p50 %.0f against %.0f ms (min %.0f against %.0f)\n",
			bName, answer, aName, bName, ms(diff), aName, sooner, pairs,
			ms(p50(a.connected)), ms(p50(b.connected)), ms(slices.Min(a.connected)), ms(slices.Min(b.connected)))
		// Where a difference lies: before Claude Code dials (its own start,
		// where a plugin enters only through the CPU its editor's side takes
		// meanwhile) or in the connect it counts itself (the plugin's
		// answers).
		var where []string
		for _, part := range []struct {
			name string
			a, b stat
		}{
			{"claude start → dial", a.start, b.start},
			{"start → its first line", a.launched, b.launched},
			{"its start → interface up", a.mounted, b.mounted},
			{"interface up → IDE dial", a.search, b.search},
			{"its connect's own time", a.claudeConnect, b.claudeConnect},
			{"editor side's CPU", a.startCPU, b.startCPU},
		} {
			if len(part.a) == 0 || len(part.b) == 0 {
				continue
			}
			w := fmt.Sprintf("%s %+.1f ms (p50 %.1f against %.1f", part.name, ms(p50(part.a)-p50(part.b)), ms(p50(part.a)), ms(p50(part.b)))
			if len(part.a) == len(part.b) {
				if lo, hi, ok := medianInterval(differences(part.a, part.b)); ok {
					w += fmt.Sprintf("; turn by turn in [%+.1f, %+.1f]", ms(lo), ms(hi))
				}
			}
			where = append(where, w+")")
		}
		if len(where) > 0 {
			fmt.Fprintf(out, "  where: %s\n", strings.Join(where, "; "))
		}
		fmt.Fprintf(out, "  what this run can tell: %s\n", tell(a.connected, b.connected, aName))
		// What a plugin can add to a start at most, measured apart from
		// Claude Code's own spread: before the dial it enters only through
		// the CPU its editor's side takes from the two cores meanwhile (all
		// of it, at worst, on the CLI's path), and at the dial through its
		// answer (dial → initialize answered, the stand-in's) and the CPU
		// that answer takes.
		if len(a.startCPU) > 0 && len(b.startCPU) > 0 && len(a.connect) > 0 && len(b.connect) > 0 {
			sa, sb := p50(a.startCPU)+p50(a.connect), p50(b.startCPU)+p50(b.connect)
			fmt.Fprintf(out, "  what each plugin controls (p50): its side's CPU during a start %.1f against %.1f ms, dial → initialize answered %.1f against %.1f ms: %s's share %+.1f ms against %s's (%.1f against %.1f)\n",
				ms(p50(a.startCPU)), ms(p50(b.startCPU)), ms(p50(a.connect)), ms(p50(b.connect)), aName, ms(sa-sb), bName, ms(sa), ms(sb))
			fmt.Fprintf(out, "the plugin's share ≤ %s's? %s\n", bName, share(a, b))
		}
	}
	for _, p := range []struct {
		name string
		r    result
	}{{aName, a}, {bName, b}} {
		if len(p.r.connected) == 0 {
			continue
		}
		fmt.Fprintf(out, "  %s's starts → connected, turn by turn (ms):", p.name)
		for _, d := range p.r.connected {
			fmt.Fprintf(out, " %.0f", ms(d))
		}
		fmt.Fprintln(out)
	}
	if len(a.diff) > 0 && len(b.diff) > 0 {
		pa, pb := p50(a.diff), p50(b.diff)
		answer := "NO"
		if pa <= pb+time.Millisecond {
			answer = "YES"
		}
		fmt.Fprintf(out, "diff drawn ≤ %s's + 1 ms? %s: openDiff → diff drawn p50 %.1f against %.1f ms (min %.1f against %.1f)\n",
			bName, answer, ms(pa), ms(pb), ms(slices.Min(a.diff)), ms(slices.Min(b.diff)))
	}
}

// share answers whether what a plugin controls in a connect is at or
// below the peer's, part by part, each compared pair by pair (the starts'
// CPU turn by turn, the stand-in's connects round by round): YES when every
// part's 95% interval of the median difference lies at or below 0, NO when
// one lies above 0, NOT SHOWN otherwise.
func share(a, b result) string {
	parts := []struct {
		name string
		a, b stat
	}{
		{"its side's CPU during a start", a.startCPU, b.startCPU},
		{"dial → initialize answered", a.connect, b.connect},
		{"its side's CPU a connect", a.connectCPU, b.connectCPU},
	}
	answer, said := "YES", make([]string, 0, len(parts))
	for _, p := range parts {
		if len(p.a) == 0 || len(p.b) == 0 {
			continue
		}
		lo, hi, ok := medianInterval(differences(p.a, p.b))
		switch {
		case !ok:
			answer = "NOT SHOWN"
			said = append(said, p.name+": too few pairs")
			continue
		case lo > 0:
			answer = "NO"
		case hi > 0 && answer == "YES":
			answer = "NOT SHOWN"
		}
		said = append(said, fmt.Sprintf("%s %+.2f ms in [%+.2f, %+.2f]", p.name, ms(p50(differences(p.a, p.b))), ms(lo), ms(hi)))
	}
	return answer + ": pair by pair, median difference and its 95% interval (sign test): " + strings.Join(said, "; ")
}

// differences is a[i]−b[i], turn by turn, over the turns both have.
func differences(a, b stat) stat {
	n := min(len(a), len(b))
	d := make(stat, n)
	for i := range n {
		d[i] = a[i] - b[i]
	}
	return d
}

// p50 is the median of s (the upper one of an even count, as stat shows).
func p50(s stat) time.Duration {
	v := slices.Clone(s)
	slices.Sort(v)
	return v[len(v)/2]
}

// tell says whether the turn-by-turn differences a[i]−b[i] show a
// difference at all: the 95% interval of their median by the sign test
// (free of any assumption on the starts' spread, which the load makes
// long-tailed). An interval that spans 0 means the run cannot tell the
// two apart, whatever the p50s say.
func tell(a, b stat, aName string) string {
	d := differences(a, b)
	n := len(d)
	lo, hi, ok := medianInterval(d)
	switch {
	case !ok:
		return fmt.Sprintf("%d turns are too few for a 95%% interval of the turn-by-turn median (6 at least)", n)
	case hi < 0:
		return fmt.Sprintf("%s sooner: the turn-by-turn median difference lies in [%+.0f, %+.0f] ms (95%%, sign test), below 0", aName, ms(lo), ms(hi))
	case lo > 0:
		return fmt.Sprintf("%s later: the turn-by-turn median difference lies in [%+.0f, %+.0f] ms (95%%, sign test), above 0", aName, ms(lo), ms(hi))
	}
	return fmt.Sprintf("no difference: the turn-by-turn median difference lies in [%+.0f, %+.0f] ms (95%%, sign test), which holds 0: the p50s differ by less than the load moves them", ms(lo), ms(hi))
}

// medianInterval is the distribution-free 95% confidence interval of the
// median of d: the k-th smallest and k-th largest of d, with k the
// largest rank at which a binomial(n, 1/2) count falls below k with
// probability at most 2.5%. ok is false when n is too small (under 6).
func medianInterval(d stat) (lo, hi time.Duration, ok bool) {
	n := len(d)
	v := slices.Clone(d)
	slices.Sort(v)
	// cdf(j) = P(X ≤ j) for X ~ binomial(n, 1/2).
	k, cdf, term := 0, 0.0, math.Pow(0.5, float64(n))
	for j := 0; j < n; j++ {
		cdf += term
		if cdf > 0.025 {
			break
		}
		k = j + 1 // P(X ≤ j) ≤ 2.5%: the interval [v[j], v[n-1-j]] holds the median with ≥ 95%
		term = term * float64(n-j) / float64(j+1)
	}
	if k == 0 {
		return 0, 0, false
	}
	return v[k-1], v[n-k], true
}

// paired compares a and b index by index (the same turn): the p50 of
// a[i]−b[i], and in how many of the pairs a was the smaller.
func paired(a, b stat) (diff time.Duration, smaller, n int) {
	d := differences(a, b)
	for _, x := range d {
		if x < 0 {
			smaller++
		}
	}
	return p50(d), smaller, len(d)
}

// loadSampler reads the 1-minute load average every 10 s until stopped.
type loadSampler struct {
	mu     sync.Mutex
	lo, hi float64
	done   chan struct{}
	once   sync.Once
}

func sampleLoad() *loadSampler {
	l := &loadSampler{lo: -1, done: make(chan struct{})}
	l.sample()
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-t.C:
				l.sample()
			}
		}
	}()
	return l
}

func (l *loadSampler) sample() {
	avg, err := proc.LoadAverage()
	if err != nil {
		return
	}
	f, _, _ := strings.Cut(avg, " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lo < 0 || v < l.lo {
		l.lo = v
	}
	l.hi = max(l.hi, v)
}

// stop ends the sampling (after one last sample) and returns the lowest
// and highest load seen.
func (l *loadSampler) stop() (lo, hi float64) {
	l.once.Do(func() { l.sample(); close(l.done) })
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lo, l.hi
}
