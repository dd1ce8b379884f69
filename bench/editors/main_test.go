//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestQuick runs one round of every step on gemkit.nvim so that the
// harness cannot rot (the real Claude Code's starts are left to the
// bench itself, and so are Gemini CLI's).
func TestQuick(t *testing.T) {
	gemkittest.Tool(t, "tmux", "tmux")
	gemkittest.Tool(t, "nvim", "neovim")
	var out strings.Builder
	if err := run([]string{"-n", "1", "-claude", "none", "-gemini", "none", "-nvim", "nvim"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gemkit.nvim", "connect: dial → initialize answered", "selection (V j) → agent", "openDiff → diff drawn", "nvim start → lock file", "idle RSS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestClaudeConnected reads the connect's line of Claude Code 2.1.330's
// debug log (--debug-file), as a start against gemkit.nvim wrote it.
func TestClaudeConnected(t *testing.T) {
	log := filepath.Join(t.TempDir(), "debug.txt")
	text := `2026-11-26T02:22:37.488Z [DEBUG] MCP server "ide": Starting connection with timeout of 30000ms
2026-11-26T02:22:37.580Z [DEBUG] MCP server "ide": Successfully connected (transport: ws-ide) in 97ms
2026-11-26T02:22:37.581Z [DEBUG] [MCP] Server "ide" connected with subscribe=false
`
	if _, _, ok := claudeConnected(log); ok {
		t.Error("a log not yet written reads as connected")
	}
	if err := os.WriteFile(log, []byte(text[:strings.Index(text, "\n")+1]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := claudeConnected(log); ok {
		t.Error("a connection only started reads as connected")
	}
	if err := os.WriteFile(log, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	at, took, ok := claudeConnected(log)
	want := time.Date(2026, 11, 26, 2, 22, 37, 580e6, time.UTC)
	if !ok || !at.Equal(want) || took != 97*time.Millisecond {
		t.Errorf("claudeConnected = %v, %v, %v; want %v, 97ms, true", at, took, ok, want)
	}
}

// TestVerdicts reads issue 47's answers off two plugins' figures: the
// connect by the turn-by-turn comparison (YES, NO, or NOT SHOWN when the
// run cannot tell, whatever the p50s say), the diff by p50 against p50 +
// 1 ms.
func TestVerdicts(t *testing.T) {
	ms := func(v ...float64) stat {
		s := make(stat, len(v))
		for i, x := range v {
			s[i] = time.Duration(x * float64(time.Millisecond))
		}
		return s
	}
	var out strings.Builder
	verdicts(&out, "a", result{connected: ms(900, 1000, 1300), diff: ms(6.5, 6.9, 7)},
		"b", result{connected: ms(1000, 950, 1200), diff: ms(5, 6, 9)})
	got := out.String()
	for _, want := range []string{
		"connect ≤ b's? NOT SHOWN: 3 turns are too few for a 95% interval of the turn-by-turn median (6 at least); turn by turn, a − b median +50 ms, a sooner in 1 of 3 turns; claude start → connected p50 1000 against 1000 ms (min 900 against 950)\n",
		"diff drawn ≤ b's + 1 ms? YES: openDiff → diff drawn p50 6.9 against 6.0 ms (min 6.5 against 5.0)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("verdicts lack %q:\n%s", want, got)
		}
	}
	b := ms(1000, 1000, 1000, 1000, 1000, 1000)
	for _, tc := range []struct {
		a    stat
		want string
	}{
		// Sooner in 3 of 6 turns: the run cannot tell.
		{ms(980, 1100, 900, 1200, 1010, 950), "connect ≤ b's? NOT SHOWN: no difference the run can tell, turn by turn in [-100, +200] ms (95%, sign test): a later by 200 ms at most;"},
		{ms(990, 980, 900, 999, 950, 970), "connect ≤ b's? YES: a sooner, turn by turn in [-100, -1] ms"},
		{ms(1001, 1010, 1100, 1020, 1050, 1030), "connect ≤ b's? NO: a later, turn by turn in [+1, +100] ms"},
	} {
		out.Reset()
		verdicts(&out, "a", result{connected: tc.a}, "b", result{connected: b})
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("verdicts(%v) lack %q:\n%s", tc.a, tc.want, out.String())
		}
	}
	out.Reset()
	verdicts(&out, "a", result{connected: b, startCPU: ms(3.8, 4, 3), connect: ms(1.3, 1, 2)},
		"b", result{connected: b, startCPU: ms(3, 2.5, 3.1), connect: ms(5.1, 4, 6)})
	if want := "  what each plugin controls (p50): its side's CPU during a start 3.8 against 3.0 ms, dial → initialize answered 1.3 against 5.1 ms: a's share -3.0 ms against b's (5.1 against 8.1)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("verdicts lack %q:\n%s", want, out.String())
	}
	// The plugin's share, pair by pair: YES only when every part is at
	// or below the peer's.
	six := func(v float64) stat { return ms(v, v, v, v, v, v) }
	for _, tc := range []struct {
		a    result
		want string
	}{
		{result{startCPU: ms(2, 2.5, 2, 1, 3, 2), connect: six(1), connectCPU: six(0.5)},
			"the plugin's share ≤ b's? YES: pair by pair, median difference and its 95% interval (sign test): its side's CPU during a start -1.00 ms in [-2.00, +0.00]; dial → initialize answered -3.00 ms in [-3.00, -3.00]; its side's CPU a connect -1.50 ms in [-1.50, -1.50]\n"},
		{result{startCPU: ms(2, 4, 2, 4, 2, 4), connect: six(1), connectCPU: six(0.5)},
			"the plugin's share ≤ b's? NOT SHOWN: pair by pair"},
		{result{startCPU: six(2), connect: six(5), connectCPU: six(0.5)},
			"the plugin's share ≤ b's? NO: pair by pair"},
	} {
		out.Reset()
		tc.a.connected = b
		verdicts(&out, "a", tc.a, "b", result{connected: b, startCPU: six(3), connect: six(4), connectCPU: six(2)})
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("verdicts(%v) lack %q:\n%s", tc.a, tc.want, out.String())
		}
	}
	out.Reset()
	verdicts(&out, "a", result{diff: ms(7.1)}, "b", result{diff: ms(6)})
	if got := out.String(); !strings.Contains(got, "diff drawn ≤ b's + 1 ms? NO") {
		t.Errorf("verdicts of a slower plugin:\n%s", got)
	}
}

// TestMedianInterval: the sign test's 95% interval of a median is the
// k-th smallest to the k-th largest value, k = 14 of 40 and 6 of 20
// (binomial tables: P(X ≤ 13) = 0.019 for n = 40, P(X ≤ 5) = 0.021 for
// n = 20), the whole range for 6 values, and none for 5.
func TestMedianInterval(t *testing.T) {
	seq := func(n int) stat {
		s := make(stat, n)
		for i := range s {
			s[i] = time.Duration(n-i) * time.Millisecond // descending: the function sorts
		}
		return s
	}
	for _, tc := range []struct {
		n      int
		lo, hi time.Duration
		ok     bool
	}{
		{40, 14 * time.Millisecond, 27 * time.Millisecond, true},
		{20, 6 * time.Millisecond, 15 * time.Millisecond, true},
		{6, 1 * time.Millisecond, 6 * time.Millisecond, true},
		{5, 0, 0, false},
	} {
		lo, hi, ok := medianInterval(seq(tc.n))
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("n = %d: medianInterval = %v, %v, %v; want %v, %v, %v", tc.n, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
	ms := func(v ...float64) stat {
		s := make(stat, len(v))
		for i, x := range v {
			s[i] = time.Duration(x * float64(time.Millisecond))
		}
		return s
	}
	b := ms(100, 100, 100, 100, 100, 100)
	for _, tc := range []struct {
		a    stat
		want string
	}{
		{ms(90, 80, 95, 70, 99, 60), "a sooner: the turn-by-turn median difference lies in [-40, -1] ms"},
		{ms(110, 120, 105, 130, 101, 140), "a later: the turn-by-turn median difference lies in [+1, +40] ms"},
		{ms(90, 120, 95, 130, 101, 60), "no difference: the turn-by-turn median difference lies in [-40, +30] ms"},
		{ms(90), "1 turns are too few"},
	} {
		if got := tell(tc.a, b, "a"); !strings.HasPrefix(got, tc.want) {
			t.Errorf("tell(%v) = %q, want it to start %q", tc.a, got, tc.want)
		}
	}
}

// TestClaudePhases reads Claude Code 2.1.330's debug log for its own
// start (first line → interface mounted) and its IDE search (mounted →
// the IDE's connection started).
func TestClaudePhases(t *testing.T) {
	log := filepath.Join(t.TempDir(), "debug.txt")
	text := `2026-11-26T02:22:36.000Z [DEBUG] MDM settings load completed in 0ms
2026-11-26T02:22:36.500Z [DEBUG] [STARTUP] Loading MCP configs...
2026-11-26T02:22:37.100Z [DEBUG] [REPL:mount] REPL mounted, disabled=false
2026-11-26T02:22:37.488Z [DEBUG] MCP server "ide": Starting connection with timeout of 30000ms
2026-11-26T02:22:37.580Z [DEBUG] MCP server "ide": Successfully connected (transport: ws-ide) in 97ms
`
	if err := os.WriteFile(log, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	first, mounted, search, ok := claudePhases(log)
	if want := time.Date(2026, 11, 26, 2, 22, 36, 0, time.UTC); !ok || !first.Equal(want) || mounted != 1100*time.Millisecond || search != 388*time.Millisecond {
		t.Errorf("claudePhases = %v, %v, %v, %v; want %v, 1.1s, 388ms, true", first, mounted, search, ok, want)
	}
	if err := os.WriteFile(log, []byte(text[:strings.Index(text, "2026-11-26T02:22:37.488Z")]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := claudePhases(log); ok {
		t.Error("a log without the IDE's connection started reads as complete")
	}
}
