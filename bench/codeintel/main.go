//go:build linux

// Command codeintel measures gemkit's code intelligence (`gemkit mcp`'s
// code_* tools, its per-workspace broker and gopls) side by side with
// cclsp 0.7.0 (npm, the most-used MCP bridge to language servers), with
// the same gopls on the same Go module, in one run:
//
//   - warm definition and references, p50 over -n calls each: gemkit by
//     position and by name from a call site, cclsp as it must be asked
//     (in the file that declares the name), and gopls asked directly by
//     a minimal LSP client (internal/lspclient), so that gemkit's own time
//     over gopls's shows;
//
//   - start to the first correct answer: process start, MCP initialize,
//     a definition call, until an answer names the right line;
//
//   - memory of the whole process tree (the MCP servers, what they
//     started, gemkit's broker with its gopls) for 1, 2 and 4 agents in
//     one workspace, each having asked one question: RSS summed, and PSS
//     (shared pages divided among the processes that share them);
//
//   - the faults issue 31 lists of cclsp: definition from a call site by
//     name, a file an agent changed read again, answers outside the
//     workspace named as such, bounded answers, duplicate servers, the
//     processes left once the agents have gone.
//
//     go run ./bench/codeintel            # -n 200, 5 starts each
//     go run ./bench/codeintel -quick     # -n 20, 2 starts each
//     go run ./bench/codeintel -ref /path/to/older/gemkit
//
// With -ref, a reference gemkit binary (an earlier build, to see what a
// change costs) is measured in the same run: its cold starts alternate
// with the others', and its warm definitions are interleaved with
// theirs. It runs with a runtime folder of its own
// (XDG_RUNTIME_DIR), so that its broker and gopls are its own.
//
// The module is the tests' Go shop with -packages generated packages of
// five files of ten functions, each calling greet.Greet (1,000 uses at
// the default 20). The MCP client is bench/internal/mcpline, the same
// for both servers.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
)

func main() {
	n := flag.Int("n", 200, "warm calls of each kind")
	starts := flag.Int("starts", 5, "cold starts of each server")
	pkgs := flag.Int("packages", 20, "generated packages")
	quick := flag.Bool("quick", false, "20 calls and 2 starts of each kind")
	ref := flag.String("ref", "", "a reference gemkit binary measured in the same run")
	gemkit := flag.String("gemkit", "", "gemkit binary (default: built from the repository), such as main's, for a reference run")
	flag.Parse()
	if *quick {
		*n, *starts = 20, 2
	}
	if err := run(*n, *starts, *pkgs, *gemkit, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "bench/codeintel:", err)
		os.Exit(1)
	}
}

// env is everything the run shares.
type env struct {
	root, tmp, ws, gemkit, cclsp, gopls, node string
	cclspConfig                               string
	environ                                   []string
	// ref is the reference gemkit binary (-ref), "" for none, and
	// refEnviron its environment.
	ref        string
	refEnviron []string
}

func run(n, starts, pkgs int, gemkit, ref string) error {
	root, err := benchenv.RepoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gemkit-bench-codeintel-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tmp, _ = filepath.EvalSymlinks(tmp)
	e := &env{root: root, tmp: tmp, ws: filepath.Join(tmp, "ws")}
	if e.gopls, err = exec.LookPath("gopls"); err != nil {
		return fmt.Errorf("gopls is not on PATH: run scripts/setup-and-test (GOBIN=/usr/local/bin go install golang.org/x/tools/gopls@v0.23.0)")
	}
	if e.node, err = exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not on PATH")
	}
	e.cclsp = filepath.Join(root, "interop", "node_modules", "cclsp", "dist", "index.js")
	if _, err := os.Stat(e.cclsp); err != nil {
		return fmt.Errorf("cclsp is not installed: run `npm ci` in interop/")
	}
	if e.gemkit = gemkit; gemkit == "" {
		if e.gemkit, err = benchenv.BuildGemkit(root, tmp); err != nil {
			return err
		}
	}
	if err := makeFixture(root, e.ws, pkgs); err != nil {
		return err
	}
	e.cclspConfig = filepath.Join(tmp, "cclsp.json")
	cfg, _ := json.Marshal(map[string]any{"servers": []any{map[string]any{"extensions": []string{"go"}, "command": []string{e.gopls}, "rootDir": e.ws}}})
	os.WriteFile(e.cclspConfig, cfg, 0o644)
	// A config folder of the run's own: no user's codeIntel object.
	e.environ = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(tmp, "config"), "CCLSP_CONFIG_PATH="+e.cclspConfig)
	if ref != "" {
		if e.ref, err = filepath.Abs(ref); err != nil {
			return err
		}
		if _, err := os.Stat(e.ref); err != nil {
			return fmt.Errorf("-ref: %w", err)
		}
		rt := filepath.Join(tmp, "ref-runtime")
		if err := os.Mkdir(rt, 0o700); err != nil {
			return err
		}
		e.refEnviron = append(append([]string(nil), e.environ...), "XDG_RUNTIME_DIR="+rt)
	}
	fmt.Printf("gopls: %s\nfixture: %d generated packages, %d uses of greet.Greet\n\n", goplsVersion(e.gopls), pkgs, pkgs*50)

	res := &results{}
	if err := e.startTimes(starts, res); err != nil {
		return err
	}
	if err := e.warm(n, res); err != nil {
		return err
	}
	if err := e.memory(res); err != nil {
		return err
	}
	if err := e.faults(res); err != nil {
		return err
	}
	res.print()
	return nil
}

func goplsVersion(gopls string) string {
	out, _ := exec.Command(gopls, "version").Output()
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}
