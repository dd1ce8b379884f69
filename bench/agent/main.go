// Command agent measures the start of `gemkit run` (issue #12's target of
// 30 ms): from fork+exec of the process to the first model request
// arriving at a loopback server, through the Gemini REST wire and through
// the chat-completions wire, with 5 installed extensions of 5
// tools each, with and without looking for an IDE companion (none runs,
// as for most runs). Beside them, in the same run, the whole process of
// `gemkit extensions list --json` over the same extensions: a start that
// loads the extensions and talks to nobody.
//
//	go run ./bench/agent [-starts 40] [-extensions 5] [-tools 5]
//
// The server stamps a request the moment its handler is entered and then
// answers one short text reply, so the run ends at once.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/internal/proc"
)

func main() {
	starts := flag.Int("starts", 40, "process starts per figure")
	exts := flag.Int("extensions", 5, "installed extensions")
	tools := flag.Int("tools", 5, "tools per extension")
	flag.Parse()
	if err := run(*starts, *exts, *tools); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(starts, exts, tools int) error {
	tmp, bin, err := benchenv.Scratch("gemkit-bench-agent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	home := filepath.Join(tmp, "home")
	ws := filepath.Join(home, "work")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, "XDG_CONFIG_HOME=" + filepath.Join(tmp, "config")}
	if err := linkExtensions(bin, tmp, ws, env, exts, tools); err != nil {
		return err
	}

	arrived := make(chan time.Time, 1)
	srv, url, err := startModel(arrived)
	if err != nil {
		return err
	}
	defer srv.Close()

	type figure struct {
		name string
		args []string
		env  []string
		wait bool // the figure ends at the request, else at exit
	}
	gem := append(env[:len(env):len(env)], "GEMINI_API_KEY=x", "GOOGLE_GEMINI_BASE_URL="+url)
	figs := []figure{
		{"gemkit run → first request (Gemini)", []string{"run", "hi"}, gem, true},
		{"gemkit run → first request (Gemini, --no-ide)", []string{"run", "--no-ide", "hi"}, gem, true},
		{"gemkit run → first request (OpenAI-compatible)", []string{"run", "--base-url", url + "/v1", "-m", "m", "hi"}, env, true},
		{"gemkit extensions list --json (whole process)", []string{"extensions", "list", "--json"}, env, false},
	}
	samples := make([][]time.Duration, len(figs))
	for i := 0; i < starts; i++ {
		for k, f := range figs { // interleaved: every figure sees the same load
			c := exec.Command(bin, f.args...)
			c.Dir, c.Env = ws, f.env
			start := time.Now()
			if err := c.Start(); err != nil {
				return err
			}
			if f.wait {
				select {
				case at := <-arrived:
					samples[k] = append(samples[k], at.Sub(start))
				case <-time.After(30 * time.Second):
					c.Process.Kill()
					return fmt.Errorf("%s: no request", f.name)
				}
				if err := c.Wait(); err != nil {
					return fmt.Errorf("%s: %v", f.name, err)
				}
			} else {
				if err := c.Wait(); err != nil {
					return fmt.Errorf("%s: %v", f.name, err)
				}
				samples[k] = append(samples[k], time.Since(start))
			}
		}
	}
	load, _ := proc.LoadAverage()
	fmt.Printf("gemkit run start, %d starts each, %d extensions × %d tools; load average %s\n", starts, exts, tools, load)
	fmt.Printf("%-50s %9s %9s %9s\n", "figure", "median", "p90", "min")
	for k, f := range figs {
		s := samples[k]
		sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
		fmt.Printf("%-50s %9s %9s %9s\n", f.name, ms(s[len(s)/2]), ms(s[len(s)*9/10]), ms(s[0]))
	}
	fmt.Println("target: gemkit run → first request ≤ 30 ms")
	return nil
}

// linkExtensions makes exts extensions of tools shell tools each and
// links them with consent, as a person would.
func linkExtensions(bin, tmp, ws string, env []string, exts, tools int) error {
	for i := 0; i < exts; i++ {
		src := filepath.Join(tmp, "src", fmt.Sprintf("ext%02d", i))
		os.MkdirAll(filepath.Join(src, "tools"), 0o755)
		var ts []string
		for j := 0; j < tools; j++ {
			ts = append(ts, fmt.Sprintf(`{"name": "t%d", "description": "Tool %d.", "executable": "tools/t.sh", "runtime": "shell",
			  "args": [{"name": "a", "type": "string", "description": "An argument."}]}`, j, j))
		}
		manifest := fmt.Sprintf(`{"name": "ext%02d", "version": "1.0.0", "description": "Extension %d.", "permissions": {}, "tools": [%s]}`, i, i, strings.Join(ts, ","))
		os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(manifest), 0o644)
		os.WriteFile(filepath.Join(src, "tools", "t.sh"), []byte("echo ok\n"), 0o755)
		c := exec.Command(bin, "extensions", "link", "--consent", src)
		c.Dir, c.Env = ws, env
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("link: %v\n%s", err, out)
		}
	}
	return nil
}

// startModel serves a model on loopback that answers every request at
// once, in Gemini's or OpenAI's stream, and tells arrived when a
// request comes (if nothing waits, the time is dropped).
func startModel(arrived chan<- time.Time) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		select {
		case arrived <- at:
		default:
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.HasPrefix(r.URL.Path, "/v1beta/") {
			fmt.Fprint(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}]}`+"\r\n\r\n")
			return
		}
		fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	})}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String(), nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
