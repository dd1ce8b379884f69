// Command acp measures `gemkit acp` beside the real `gemini --acp`
// (Gemini CLI 0.61.0 from interop/node_modules) in the same run, against
// the same loopback model server (issue #25's targets: start →
// initialize answered ≤ 15 ms; session/prompt → first model request
// ≤ 10 ms; idle RSS with one session ≤ 15 MB):
//
//   - start → initialize: from fork+exec to the initialize response read;
//
//   - prompt → first model request: from the session/prompt line written
//     to the model server's handler being entered (any model call: Gemini
//     CLI's first is its router's);
//
//   - idle RSS: the resident memory of the agent's process tree one second
//     after session/new answered, no prompt yet (Gemini CLI relaunches
//     itself in a child process; both are counted).
//
//     go run ./bench/acp [-runs 10] [-gemini-runs 5]
//
// The agents are spoken to over their stdio with raw JSON-RPC lines, so no
// client library's cost is counted.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/proc"
)

func main() {
	runs := flag.Int("runs", 10, "runs of gemkit acp")
	gruns := flag.Int("gemini-runs", 5, "runs of gemini --acp (0: leave it out)")
	flag.Parse()
	if err := run(*runs, *gruns); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// stamper is the model server: it notes when each model request arrives,
// then lets the scripted server answer it.
type stamper struct {
	mu    sync.Mutex
	times []time.Time
	proxy *httputil.ReverseProxy
	fake  *fakemodel.Server
}

func (s *stamper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	if strings.HasPrefix(r.URL.Path, "/v1beta/models/") {
		s.mu.Lock()
		s.times = append(s.times, now)
		s.mu.Unlock()
	}
	s.proxy.ServeHTTP(w, r)
}

// firstAfter is the first model request at or after t.
func (s *stamper) firstAfter(t time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.times {
		if !x.Before(t) {
			return x, true
		}
	}
	return time.Time{}, false
}

type agentCmd struct {
	name string
	argv []string
	env  []string
}

type sample struct {
	init, prompt time.Duration
	rss          int64
}

func run(runs, gruns int) error {
	tmp, bin, err := benchenv.Scratch("gemkit-bench-acp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fake, err := fakemodel.Start()
	if err != nil {
		return err
	}
	defer fake.Close()
	u, _ := url.Parse(fake.URL)
	st := &stamper{proxy: httputil.NewSingleHostReverseProxy(u), fake: fake}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: st}
	go srv.Serve(ln)
	defer srv.Close()

	home := filepath.Join(tmp, "home")
	ws := filepath.Join(home, "work")
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o755)
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(`{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "privacy": {"usageStatisticsEnabled": false}, "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}`), 0o600)
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, "XDG_CONFIG_HOME=" + filepath.Join(tmp, "config"),
		"GEMINI_API_KEY=bench", "GOOGLE_GEMINI_BASE_URL=http://" + ln.Addr().String(), "NO_COLOR=1", "CI=1"}
	agents := []agentCmd{{name: "gemkit acp", argv: []string{bin, "acp"}, env: env}}
	n := map[string]int{"gemkit acp": runs}
	if gruns > 0 {
		node, err := exec.LookPath("node")
		if err != nil {
			return fmt.Errorf("node is needed for gemini --acp (or -gemini-runs 0): %w", err)
		}
		root, err := benchenv.RepoRoot()
		if err != nil {
			return err
		}
		cli := filepath.Join(root, "interop", "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
		if _, err := os.Stat(cli); err != nil {
			return fmt.Errorf("gemini-cli is not installed in interop/node_modules: %w", err)
		}
		agents = append(agents, agentCmd{name: "gemini --acp", argv: []string{node, cli, "--acp"}, env: env})
		n["gemini --acp"] = gruns
	}
	res := map[string][]sample{}
	// The reference for the start: the whole process of a gemkit command
	// that reads the config folder and exits, at the same load.
	var plain []time.Duration
	for i := 0; ; i++ {
		if i < runs {
			c := exec.Command(bin, "extensions", "list", "--json")
			c.Dir, c.Env = ws, env
			t := time.Now()
			if err := c.Run(); err != nil {
				return fmt.Errorf("extensions list: %w", err)
			}
			plain = append(plain, time.Since(t))
		}
		done := true
		for _, a := range agents {
			if i >= n[a.name] {
				continue
			}
			done = false
			fake.Add(fakemodel.Text("ok"))
			s, err := once(a, ws, st)
			if err != nil {
				return fmt.Errorf("%s: %w", a.name, err)
			}
			res[a.name] = append(res[a.name], s)
		}
		if done {
			break
		}
	}
	load, _ := proc.LoadAverage()
	fmt.Printf("load average: %s\n", load)
	fmt.Printf("%-14s %5s  %28s  %28s  %18s\n", "agent", "runs", "start → initialize (med/max)", "prompt → model req (med/max)", "idle RSS (med)")
	fmt.Printf("%-14s %5d  %28s   (whole process of `gemkit extensions list --json`, the start's reference)\n", "gemkit list", len(plain), medMax(plain))
	for _, a := range agents {
		ss := res[a.name]
		var ini, pr []time.Duration
		var rss []int64
		for _, s := range ss {
			ini, pr, rss = append(ini, s.init), append(pr, s.prompt), append(rss, s.rss)
		}
		fmt.Printf("%-14s %5d  %28s  %28s  %15.1f MB\n", a.name, len(ss), medMax(ini), medMax(pr), float64(median(rss))/(1<<20))
	}
	return nil
}

func medMax(d []time.Duration) string {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return fmt.Sprintf("%.1f / %.1f ms", ms(d[len(d)/2]), ms(d[len(d)-1]))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(x []int64) int64 {
	sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
	return x[len(x)/2]
}

// once starts the agent, initializes, opens a session, measures its idle
// memory, sends one prompt and waits for its answer.
func once(a agentCmd, ws string, st *stamper) (sample, error) {
	var s sample
	cmd := exec.Command(a.argv[0], a.argv[1:]...)
	cmd.Dir, cmd.Env = ws, a.env
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return s, err
	}
	defer func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			killTree(cmd.Process.Pid)
			<-done
		}
	}()
	r := bufio.NewReader(out)
	send := func(line string) error {
		_, err := io.WriteString(in, line+"\n")
		return err
	}
	wait := func(id int) (json.RawMessage, error) {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return nil, fmt.Errorf("waiting for answer %d: %w", id, err)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &m) != nil || m.Method != "" || string(m.ID) != strconv.Itoa(id) {
				continue
			}
			if m.Error != nil {
				return nil, fmt.Errorf("answer %d: %s", id, m.Error)
			}
			return m.Result, nil
		}
	}
	if err := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`); err != nil {
		return s, err
	}
	if _, err := wait(1); err != nil {
		return s, err
	}
	s.init = time.Since(start)
	cwd, _ := json.Marshal(ws)
	send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":` + string(cwd) + `,"mcpServers":[]}}`)
	res, err := wait(2)
	if err != nil {
		return s, err
	}
	var sess struct{ SessionID string }
	json.Unmarshal(res, &sess)
	time.Sleep(time.Second)
	s.rss = treeRSS(cmd.Process.Pid)
	sent := time.Now()
	send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sess.SessionID + `","prompt":[{"type":"text","text":"hi"}]}}`)
	if _, err := wait(3); err != nil {
		return s, err
	}
	first, ok := st.firstAfter(sent)
	if !ok {
		return s, fmt.Errorf("no model request after the prompt")
	}
	s.prompt = first.Sub(sent)
	return s, nil
}

// treeRSS is VmRSS summed over pid and its descendants, in bytes.
func treeRSS(pid int) int64 {
	var total int64
	for _, p := range proc.Tree(pid) {
		rss, _ := proc.StatusBytes(p, "VmRSS")
		total += rss
	}
	return total
}

func killTree(pid int) {
	for _, p := range proc.Tree(pid) {
		if proc, err := os.FindProcess(p); err == nil {
			proc.Kill()
		}
	}
}
