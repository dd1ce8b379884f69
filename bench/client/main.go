// Command client measures gemkit's Go client of the IDE companion side by
// side with the real Gemini CLI's client code (IdeClient and its helpers from
// @google/gemini-cli-core 0.61.0: packages/core/src/ide/ide-client.ts and
// ide-connection-utils.ts, run by bench/client/realcli.mjs), in the same run,
// against the same companion (`gemkit ide serve --editor stdio`) and the same
// discovery directory holding many discovery files.
//
//	go run ./bench/client            # 200 files, 200 chooses, 30 connects
//	go run ./bench/client -quick     # a few iterations, to check it works
//
// Figures:
//   - choose: picking the discovery file among -files files, the IDE pid
//     known (the real CLI's getConnectionConfigFromFile; our discovery.Choose);
//   - whole choose step: finding the IDE process (the process-tree walk),
//     choosing the file and deciding which IDE it is (client.Discover);
//   - connect → first context: from nothing to the first ide/contextUpdate
//     in the client's store (walk, choose, initialize, tools/list, GET
//     stream), with a fresh client each time.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/conformance/scripted"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

type config struct {
	root     string
	gemkit   string
	node     string
	files    int
	chooses  int
	connects int
	out      io.Writer
}

func main() {
	var cfg config
	var quick bool
	flag.StringVar(&cfg.root, "root", "", "repository root (default: found from the working directory)")
	flag.StringVar(&cfg.gemkit, "gemkit", "", "gemkit binary serving the companion (default: built into a temp dir)")
	flag.StringVar(&cfg.node, "node", "node", "node binary for the real CLI's client code")
	flag.IntVar(&cfg.files, "files", 200, "discovery files present")
	flag.IntVar(&cfg.chooses, "chooses", 200, "choose iterations per client")
	flag.IntVar(&cfg.connects, "connects", 30, "connect → first context iterations per client")
	flag.BoolVar(&quick, "quick", false, "a few iterations only")
	flag.Parse()
	if quick {
		cfg.chooses, cfg.connects = 5, 2
	}
	cfg.out = os.Stdout
	if err := run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench/client:", err)
		os.Exit(1)
	}
}

// result is one client's figures, in milliseconds.
type result struct {
	ChooseOnly []float64 `json:"chooseOnly"`
	Full       []float64 `json:"full"`
	Connect    []float64 `json:"connect"`
	ChosenPort *int      `json:"chosenPort"`
	Error      string    `json:"error"`
}

func run(ctx context.Context, cfg config) error {
	if cfg.root == "" {
		var err error
		if cfg.root, err = benchenv.RepoRoot(); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "gemkit-bench-client-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if cfg.gemkit == "" {
		cfg.gemkit = filepath.Join(tmp, "gemkit")
		build := exec.Command("go", "build", "-o", cfg.gemkit, "./cmd/gemkit")
		build.Dir = cfg.root
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	ws := filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	// The companion announces itself in a private TMPDIR, so no other
	// Gemini CLI on the machine sees it.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	ed, err := scripted.Start(sctx, scripted.Options{Binary: cfg.gemkit, Workspace: []string{ws}, TMPDIR: tmp})
	cancel()
	if err != nil {
		return err
	}
	defer ed.Stop()
	dir := filepath.Dir(ed.Ready.DiscoveryFile)
	if err := fillDiscoveryDir(dir, tmp, cfg.files-1); err != nil {
		return err
	}
	// Something to send as the first context.
	active := filepath.Join(ws, "main.go")
	if err := os.WriteFile(active, []byte("package main\n"), 0o644); err != nil {
		return err
	}
	ed.Focus(active, 1, 1, "")

	// The CLI runs in the workspace, not inside a container companion.
	if err := os.Chdir(ws); err != nil {
		return err
	}
	getenv := func(k string) string {
		switch {
		case k == "SSH_CONNECTION":
			return "127.0.0.1 1 127.0.0.1 22"
		case k == "TMPDIR":
			return tmp
		case strings.HasPrefix(k, "GEMINI_CLI_IDE_"), k == "TERM_PROGRAM":
			return ""
		}
		return os.Getenv(k)
	}

	goRes, err := measureGo(ctx, cfg, dir, ws, getenv)
	if err != nil {
		return fmt.Errorf("gemkit client: %w", err)
	}
	nodeRes, err := measureNode(ctx, cfg, tmp, ws)
	if err != nil {
		return fmt.Errorf("real CLI client: %w", err)
	}
	if goRes.ChosenPort == nil || nodeRes.ChosenPort == nil || *goRes.ChosenPort != *nodeRes.ChosenPort {
		return fmt.Errorf("the clients chose different files: gemkit port %v, real CLI port %v", deref(goRes.ChosenPort), deref(nodeRes.ChosenPort))
	}
	report(cfg, goRes, nodeRes, ed.Ready.Port)
	return nil
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// fillDiscoveryDir adds n discovery files of other editors: half of them
// name a live pid (this process), half a pid that cannot run; each names
// a workspace folder of its own that exists, so that both clients resolve
// real paths for every file.
func fillDiscoveryDir(dir, tmp string, n int) error {
	for i := range n {
		pid := os.Getpid()
		if i%2 == 1 {
			pid = 90000000 + i // above any pid_max: not running
		}
		port := 20000 + i
		folder := filepath.Join(tmp, "other", fmt.Sprintf("project-%03d", i))
		if err := os.MkdirAll(folder, 0o755); err != nil {
			return err
		}
		data, err := json.Marshal(ide.DiscoveryFile{Port: port, WorkspacePath: folder, AuthToken: fmt.Sprintf("token-%d", i),
			IDEInfo: &ide.IDEInfo{Name: "other", DisplayName: "Other"}})
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, discovery.FileName(pid, port)), data, 0o600); err != nil {
			return err
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) != n+1 {
		return fmt.Errorf("%d files in %s, want %d", len(ents), dir, n+1)
	}
	return nil
}

func measureGo(ctx context.Context, cfg config, dir, ws string, getenv func(string) string) (*result, error) {
	r := &result{}
	proc := discovery.FindIDEProcess(ctx, discovery.FindOptions{Getenv: getenv})
	for range cfg.chooses {
		t0 := time.Now()
		ch, err := discovery.Choose(discovery.ChooseOptions{Dir: dir, IDEPID: proc.PID, Cwd: ws, Getenv: getenv})
		r.ChooseOnly = append(r.ChooseOnly, msSince(t0))
		if err != nil {
			return nil, err
		}
		if ch.Chosen != nil {
			p := ch.Chosen.Contents.Port
			r.ChosenPort = &p
		}
		t0 = time.Now()
		if _, err := client.Discover(ctx, client.Options{Dir: dir, Cwd: ws, Getenv: getenv}); err != nil {
			return nil, err
		}
		r.Full = append(r.Full, msSince(t0))
	}
	for range cfg.connects {
		t0 := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		c, _, err := client.Connect(cctx, client.Options{Dir: dir, Cwd: ws, Getenv: getenv})
		if err != nil {
			cancel()
			return nil, err
		}
		_, err = c.WaitContext(cctx)
		r.Connect = append(r.Connect, msSince(t0))
		cancel()
		c.Close(context.Background())
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

func measureNode(ctx context.Context, cfg config, tmp, ws string) (*result, error) {
	script := filepath.Join(cfg.root, "bench", "client", "realcli.mjs")
	if _, err := os.Stat(filepath.Join(cfg.root, "interop", "node_modules", "@google", "gemini-cli-core")); err != nil {
		return nil, fmt.Errorf("interop/node_modules is missing: run `npm install --no-save` in interop/ (%w)", err)
	}
	cmd := exec.CommandContext(ctx, cfg.node, script, fmt.Sprint(cfg.chooses), fmt.Sprint(cfg.connects))
	cmd.Dir = ws
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GEMINI_CLI_IDE_") || strings.HasPrefix(kv, "TMPDIR=") || strings.HasPrefix(kv, "TERM_PROGRAM=") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "TMPDIR="+tmp, "SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22", "NO_COLOR=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var r *result
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "REALCLI "); ok {
			r = &result{}
			if jerr := json.Unmarshal([]byte(line), r); jerr != nil {
				return nil, jerr
			}
		}
	}
	if r == nil || err != nil || r.Error != "" {
		detail := ""
		if r != nil {
			detail = r.Error
		}
		return nil, fmt.Errorf("node: %v %s\n%s", err, detail, tail(stderr.String(), 2000))
	}
	return r, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(p/100*float64(len(s)-1) + 0.5)
	return s[i]
}

func report(cfg config, g, n *result, port int) {
	fmt.Fprintf(cfg.out, "IDE client: gemkit (Go, modelcontextprotocol/go-sdk) vs the real Gemini CLI (IdeClient, @google/gemini-cli-core 0.61.0), same run\n")
	fmt.Fprintf(cfg.out, "%d discovery files present; both chose the companion on port %d\n\n", cfg.files, port)
	w := tabwriter.NewWriter(cfg.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "figure (ms)\tn\tgemkit p50\tgemkit p90\treal CLI p50\treal CLI p90\tgemkit/real p50\t")
	row := func(name string, a, b []float64) {
		ga, gb := pct(a, 50), pct(b, 50)
		ratio := "-"
		if gb > 0 {
			ratio = fmt.Sprintf("%.3f", ga/gb)
		}
		fmt.Fprintf(w, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n", name, len(a), ga, pct(a, 90), gb, pct(b, 90), ratio)
	}
	row("choose among files (IDE pid known)", g.ChooseOnly, n.ChooseOnly)
	row("whole choose step (walk+choose+detect)", g.Full, n.Full)
	row("connect → first context", g.Connect, n.Connect)
	w.Flush()
	verdict := "meets"
	if pct(g.Full, 50) > 20 {
		verdict = "MISSES"
	}
	fmt.Fprintf(cfg.out, "\ntarget: whole choose step with %d files ≤ 20 ms p50: gemkit %s it (%.2f ms)\n", cfg.files, verdict, pct(g.Full, 50))
}
