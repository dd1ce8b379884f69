//go:build linux

// Command hooks measures what running an extension's command hook
// through gemkit costs: a hook run as Gemini CLI 0.61 runs it (bash -c
// with the hook's command, its JSON input on stdin, until it exits)
// against the same hook run as Gemini CLI runs it once the extension is
// switched to gemkit (bash -c with gemkit's hook, `gemkit extensions hook
// EXT LABEL`, which runs the hook's command in gemkit's sandbox), the
// two interleaved in one run so that they see the same machine load.
// Each row is a hook of its own: a shell one (cat and echo) and a Node
// one (node reading its input and printing a verdict), the form
// published hooks take.
//
//	go run ./bench/hooks [-n 200] [-gemkit path/to/gemkit]
//
// Without -gemkit it builds gemkit into a temporary folder first.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/proc"
)

func main() {
	n := flag.Int("n", 200, "runs of each hook, each way")
	bin := flag.String("gemkit", "", "the gemkit binary (default: built from this tree)")
	ref := flag.String("ref", "", "a second gemkit binary (an earlier commit's) whose hook runs in the same rounds")
	flag.Parse()
	if err := bench(*n, *bin, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// hook is one row: a hook's command as hooks.json writes it.
type hook struct {
	name, command string
	files         map[string]string
}

var hooks = []hook{
	{"shell hook (cat, echo)", `cat >/dev/null; echo '{"decision":"deny","reason":"bench"}'`, nil},
	{"node hook", "node ${extensionPath}/hooks/verdict.js", map[string]string{"hooks/verdict.js": `let s = '';
process.stdin.on('data', d => s += d).on('end', () => {
  const ev = JSON.parse(s);
  console.log(JSON.stringify(ev.tool_name === 'write_file' ? {decision: 'deny', reason: 'bench'} : {}));
});
`}},
}

func bench(n int, bin, ref string) error {
	root, err := os.MkdirTemp("", "gemkit-bench-hooks-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	if bin == "" {
		bin = filepath.Join(root, "gemkit")
		build := exec.Command("go", "build", "-o", bin, "./cmd/gemkit")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "home", "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	// Both ways get the same environment, the one a person's Gemini CLI
	// would pass on, less what would time a runtime's start rather than
	// gemkit's (NODE_EXTRA_CA_CERTS has Node read a certificate bundle at
	// every start, which the hook profile does not pass on).
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "USER=" + os.Getenv("USER")}
	input := []byte(`{"session_id":"bench","hook_event_name":"BeforeTool","cwd":"` + ws + `","tool_name":"write_file","tool_input":{"file_path":"a.txt","content":"x"}}`)
	fmt.Printf("hooks through gemkit against run bare, %d runs each, interleaved; spawn of bash -c to its exit\n\n", n)
	fmt.Printf("load average at the start: %s\n", loadavg())
	fmt.Printf("%-26s %10s %10s %10s %10s %14s %12s %12s %14s\n", "hook", "bare p50", "bare p90", "gemkit p50", "gemkit p90", "added at p50", "bare CPU", "gemkit CPU", "CPU added")
	for i, h := range hooks {
		name, src, err := installHook(bin, root, ws, env, i, h)
		if err != nil {
			return err
		}
		bare := strings.ReplaceAll(h.command, "${extensionPath}", src)
		through := bin + " extensions hook --home " + home + " " + name + " BeforeTool-1"
		// The CPU time of each run's process tree (bash and all it
		// waited for), p50: unlike the time, the machine's load does not
		// inflate it many times over.
		var tb, tg, cb, cg, tr, cr []time.Duration
		for j := 0; j < n; j++ {
			for _, c := range []struct {
				cmd      string
				out, cpu *[]time.Duration
			}{{bare, &tb, &cb}, {through, &tg, &cg}, {strings.Replace(through, bin, ref, 1), &tr, &cr}} {
				if ref == "" && c.out == &tr {
					continue
				}
				d, cpu, err := runOnce(c.cmd, ws, env, input)
				if err != nil {
					return err
				}
				*c.out = append(*c.out, d)
				*c.cpu = append(*c.cpu, cpu)
			}
		}
		// A warm sandbox's runs take place in gemkit's warm server (its
		// process and the sandboxes it reaped), which wait4 of bash does
		// not count: its CPU over the row, a share per run, is added.
		server, refServer := serverCPU(home, name, bin)/time.Duration(n), time.Duration(0)
		wakes, refWakes := serverSwitches(home, name, bin)/n, 0
		if ref != "" {
			refWakes = serverSwitches(home, name, ref) / n
		}
		for i := range cg {
			cg[i] += server
		}
		if ref != "" {
			refServer = serverCPU(home, name, ref) / time.Duration(n)
			for i := range cr {
				cr[i] += refServer
			}
		}
		fmt.Printf("%-26s %10s %10s %10s %10s %14s %12s %12s %14s\n", h.name, ms(pct(tb, 50)), ms(pct(tb, 90)), ms(pct(tg, 50)), ms(pct(tg, 90)), ms(pct(tg, 50)-pct(tb, 50)),
			ms(pct(cb, 50)), ms(pct(cg, 50)), ms(pct(cg, 50)-pct(cb, 50)))
		if server > 0 {
			fmt.Printf("%-26s %s a run of its warm server's CPU, in gemkit CPU; %d sleeps of its threads a run\n", "", ms(server), wakes)
		}
		if ref != "" {
			fmt.Printf("%-26s %10s %10s %10s %10s %14s %12s %12s %14s\n", "  through -ref", "", "", ms(pct(tr, 50)), ms(pct(tr, 90)), ms(pct(tr, 50)-pct(tb, 50)),
				"", ms(pct(cr, 50)), ms(pct(cr, 50)-pct(cb, 50)))
			if refServer > 0 {
				fmt.Printf("%-26s %s a run of -ref's warm server's CPU, in its CPU; %d sleeps of its threads a run\n", "", ms(refServer), refWakes)
			}
		}
	}
	fmt.Printf("load average at the end: %s\n", loadavg())
	return nil
}

// installHook writes the i-th hook's extension, links it with consent
// and switches it to the sandbox, as a person would.
func installHook(bin, root, ws string, env []string, i int, h hook) (name, src string, err error) {
	name = fmt.Sprintf("bench-hook-%d", i)
	src = filepath.Join(root, "src", name)
	files := map[string]string{
		"gemini-extension.json": `{"name": "` + name + `", "version": "1.0.0"}`,
		"hooks/hooks.json":      `{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": ` + quoteJSON(h.command) + `}]}]}}`,
	}
	for k, v := range h.files {
		files[k] = v
	}
	for rel, body := range files {
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return "", "", err
		}
	}
	for _, args := range [][]string{{"extensions", "link", src, "--consent"}, {"extensions", "sandbox", name}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = ws, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("gemkit %v: %v\n%s", args, err, out)
		}
	}
	return name, src, nil
}

// runOnce runs command as Gemini CLI runs a hook (bash -c, the input on
// stdin, stdout and stderr read) and times it from spawn to exit.
func runOnce(command, dir string, env []string, input []byte) (time.Duration, time.Duration, error) {
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(env, "GEMINI_PROJECT_DIR="+dir, "GEMINI_CWD="+dir, "GEMINI_SESSION_ID=bench", "CLAUDE_PROJECT_DIR="+dir)
	cmd.Stdin = bytes.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	// A verdict that narrows the call: gemkit passes a hook's "allow"
	// on to Gemini CLI as nothing (hookout), since it acts on nothing.
	if err != nil || !strings.Contains(out.String(), `"decision":"deny"`) {
		return 0, 0, fmt.Errorf("%s: %v\nstdout: %s\nstderr: %s", command, err, out.String(), errb.String())
	}
	var cpu time.Duration
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return d, cpu, nil
}

// loadavg is the machine's three load averages, "?" where unknown.
func loadavg() string {
	l, err := proc.LoadAverage()
	if err != nil {
		return "?"
	}
	return l
}

func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// serverCPU is the CPU time so far of the warm servers of the hook of
// extension ext in home (gemkit extensions hook --home HOME EXT ...
// --warm-serve) that run the binary bin (-gemkit's and -ref's servers
// serve the same hook of the same home side by side), with their
// reaped children (the sandboxes): user and system time, and the
// children's, in clock ticks (10 ms steps).
func serverCPU(home, ext, bin string) time.Duration {
	var total time.Duration
	for _, pid := range servers(home, ext, bin) {
		if st, err := proc.ReadStat(pid); err == nil {
			total += st.CPU
		}
	}
	return total
}

// serverSwitches is the voluntary context switches so far of the
// threads of the warm servers serverCPU counts (each sleep of Go's
// system monitor is one, as is each wait of another thread).
func serverSwitches(home, ext, bin string) int {
	total := 0
	for _, pid := range servers(home, ext, bin) {
		if k, err := proc.VoluntarySwitches(pid); err == nil {
			total += k
		}
	}
	return total
}

// servers are the pids of the warm servers of the hook of extension ext
// in home that run the binary bin.
func servers(home, ext, bin string) []int {
	want, err := os.Stat(bin)
	if err != nil {
		return nil
	}
	var out []int
	pids, _ := proc.Pids()
	for _, pid := range pids {
		args, err := proc.Cmdline(pid)
		if err != nil || !slices.Contains(args, "--warm-serve") || !slices.Contains(args, home) || !slices.Contains(args, ext) {
			continue
		}
		if exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || !os.SameFile(exe, want) {
			continue
		}
		out = append(out, pid)
	}
	return out
}
