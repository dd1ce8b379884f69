// Command sessions measures `gemkit acp`'s stored sessions: session/load
// of a 500-turn conversation (its whole history replayed as
// session/update notifications before the answer) and session/list over
// a folder of 1,000 sessions (the first page, and every page through
// the cursors; with and without the cwd filter).
//
// session/new, measured last, is the reference: a session with no
// history, its agent built as session/load builds it.
//
// Each run starts a fresh `gemkit acp` (so no session is open in it
// yet), initializes it, then times one request, from its line written
// on the agent's stdin to its answer read on stdout, every notification
// before the answer read too. Raw JSON-RPC lines: no client library's
// cost is counted.
//
//	go run ./bench/acp/sessions [-runs 10]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/internal/acp/store"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/model"
	"github.com/gemkit/gemkit/internal/proc"
)

// The sizes the issue asks about.
const (
	turns    = 500
	sessions = 1000
)

func main() {
	runs := flag.Int("runs", 10, "runs of each measure")
	flag.Parse()
	if err := run(*runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(runs int) error {
	tmp, bin, err := benchenv.Scratch("gemkit-bench-acp-sessions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fake, err := fakemodel.Start()
	if err != nil {
		return err
	}
	defer fake.Close()
	home := filepath.Join(tmp, "home")
	ws := filepath.Join(home, "work")
	other := filepath.Join(home, "other")
	for _, d := range []string{ws, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, "XDG_CONFIG_HOME=" + filepath.Join(tmp, "config"),
		"GEMINI_API_KEY=bench", "GOOGLE_GEMINI_BASE_URL=" + fake.URL}
	st := store.Open(gemkitdir.ACPSessions(home))
	long, size, err := seed(st, ws, other)
	if err != nil {
		return err
	}
	a := agent{bin: bin, env: env, ws: ws}
	measures := []struct {
		name string
		req  func(*conn) (int, error)
	}{
		{fmt.Sprintf("session/load, %d turns", turns), func(c *conn) (int, error) {
			return c.call("session/load", map[string]any{"sessionId": long, "cwd": ws, "mcpServers": []any{}}, nil)
		}},
		{fmt.Sprintf("session/list, first page of %d", sessions), func(c *conn) (int, error) {
			var page struct {
				Sessions []json.RawMessage `json:"sessions"`
			}
			_, err := c.call("session/list", map[string]any{}, &page)
			return len(page.Sessions), err
		}},
		{fmt.Sprintf("session/list, all %d, every page", sessions), func(c *conn) (int, error) { return c.listAll(nil) }},
		{fmt.Sprintf("session/list, cwd filter (%d of them)", sessions/2), func(c *conn) (int, error) { return c.listAll(&ws) }},
		// Last: each stores one more session.
		{"session/new (the reference: no history)", func(c *conn) (int, error) {
			return c.call("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}}, nil)
		}},
	}
	load, _ := proc.LoadAverage()
	fmt.Printf("load average: %s\n", load)
	fmt.Printf("the %d-turn session: %d messages, %.1f MB on disk\n", turns, 4*turns, float64(size)/(1<<20))
	fmt.Printf("%-42s %5s %24s %18s\n", "request", "runs", "answered (med / max)", "lines / sessions")
	for _, m := range measures {
		var ds []time.Duration
		lines := 0
		for range runs {
			c, err := a.start()
			if err != nil {
				return err
			}
			t := time.Now()
			n, err := m.req(c)
			d := time.Since(t)
			c.close()
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			ds, lines = append(ds, d), n
		}
		fmt.Printf("%-42s %5d %24s %18d\n", m.name, runs, medMax(ds), lines)
	}
	return nil
}

// seed stores the 500-turn session in ws and 1,000 small ones, half in
// ws and half in other; it returns the long one's id and file size.
func seed(st *store.Store, ws, other string) (string, int64, error) {
	now := time.Now().UTC()
	long := &store.Session{Meta: store.Meta{ID: store.NewID(), Cwd: ws, Title: "A long conversation", Created: now, Updated: now}}
	result := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { /* … */ }\n", 30)
	for i := range turns {
		args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("src/file_%d.go", i)})
		long.History = append(long.History,
			model.Message{Role: model.User, Text: fmt.Sprintf("Turn %d: read src/file_%d.go and tell me what its handler does, briefly.", i, i)},
			model.Message{Role: model.Assistant, Text: "Let me read it.", Calls: []model.Call{{Name: "read_file", Args: args}}},
			model.Message{Role: model.Tool, Results: []model.Result{{Name: "read_file", Text: result}}},
			model.Message{Role: model.Assistant, Text: strings.Repeat("The handler answers each request with the file's summary. ", 6)})
	}
	if err := st.Save(long); err != nil {
		return "", 0, err
	}
	for i := range sessions - 1 {
		cwd := ws
		if i%2 == 1 {
			cwd = other
		}
		t := now.Add(-time.Duration(i+1) * time.Minute)
		s := &store.Session{Meta: store.Meta{ID: store.NewID(), Cwd: cwd, Title: fmt.Sprintf("Session %d", i), Created: t, Updated: t},
			History: []model.Message{{Role: model.User, Text: "hello"}, {Role: model.Assistant, Text: "Hello! What shall we do?"}}}
		if err := st.Save(s); err != nil {
			return "", 0, err
		}
	}
	fi, err := os.Stat(filepath.Join(st.Dir(), long.ID+".jsonl"))
	if err != nil {
		return "", 0, err
	}
	return long.ID, fi.Size(), nil
}

type agent struct {
	bin, ws string
	env     []string
}

// conn is one started `gemkit acp`, initialized.
type conn struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	next int
}

func (a agent) start() (*conn, error) {
	cmd := exec.Command(a.bin, "acp")
	cmd.Dir, cmd.Env, cmd.Stderr = a.ws, a.env, io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &conn{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	if _, err := c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, nil); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// call sends one request and reads up to its answer, into result when
// given; it returns how many lines it read (for session/load: the
// replay's notifications and the answer).
func (c *conn) call(method string, params any, result any) (int, error) {
	c.next++
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		return 0, err
	}
	for n := 1; ; n++ {
		b, err := c.out.ReadBytes('\n')
		if err != nil {
			return n, fmt.Errorf("%s: %w", method, err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return n, err
		}
		if m.ID == nil || *m.ID != c.next || m.Method != "" {
			continue
		}
		if m.Error != nil {
			return n, fmt.Errorf("%s: %s", method, m.Error)
		}
		if result != nil {
			return n, json.Unmarshal(m.Result, result)
		}
		return n, nil
	}
}

// listAll lists every page, of the folder cwd when it is given; it
// returns how many sessions it was given.
func (c *conn) listAll(cwd *string) (int, error) {
	total, cursor := 0, ""
	for {
		p := map[string]any{}
		if cwd != nil {
			p["cwd"] = *cwd
		}
		if cursor != "" {
			p["cursor"] = cursor
		}
		var page struct {
			Sessions   []json.RawMessage `json:"sessions"`
			NextCursor string            `json:"nextCursor"`
		}
		if _, err := c.call("session/list", p, &page); err != nil {
			return total, err
		}
		total += len(page.Sessions)
		if cursor = page.NextCursor; cursor == "" {
			return total, nil
		}
	}
}

func (c *conn) close() {
	c.in.Close()
	c.cmd.Wait()
}

func medMax(d []time.Duration) string {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return fmt.Sprintf("%.1f / %.1f ms", ms(d[len(d)/2]), ms(d[len(d)-1]))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
