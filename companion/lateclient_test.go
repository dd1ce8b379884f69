package companion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestRealClientLateToolsList: the REAL Gemini CLI client, whose
// tools/list reaches the companion only after the header timeout, still
// gets the diff tools. A Gemini CLI starting on a loaded machine does
// that: its tools/list opens a second connection (the first carries the
// event stream), which the kernel completes at once, and its busy event
// loop writes the request seconds later. The companion closed such a
// connection unanswered at the header timeout counted from the accept;
// the client then took the connection as lost (clearing the context),
// caught the failed tools/list (no tools), and set itself connected
// anyway, without diffs, for the rest of its session: the CLI asked in
// its own terminal ("Modify with external editor") and the editor never
// showed the change (TestLSPNeovimGeminiCLI/0.7 in a CI run, whose
// /ide status said "Connected" with no open files).
//
// A proxy in front of the companion plays the late client: it connects
// upstream as soon as the client connects, and forwards a connection
// whose first request is a tools/list only after hold.
func TestRealClientLateToolsList(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core/package.json")
	const header, hold = time.Second, 3 * time.Second
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{Workspace: []string{ws}, Editor: newFakeEditor(), HeaderTimeout: header})
	// The client finds the proxy, and no stdio way round it.
	tmp := proxiedDiscovery(t, srv, lateProxy(t, srv.Port(), hold))
	script, err := filepath.Abs(filepath.Join("testdata", "lateclient", "connect.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, interop)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, "HOME=" + t.TempDir(),
		"SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22"} // not "in a container" even where /.dockerenv exists
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the real client: %v\n%s", err, stderr.Bytes())
	}
	var got struct {
		Status  string
		Diffing bool
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("the real client's answer %q: %v\n%s", stdout.Bytes(), err, stderr.Bytes())
	}
	if got.Status != "connected" || !got.Diffing {
		t.Fatalf("with its tools/list written %v after its connect (header timeout %v), the real client is %s with diffing %v; want connected with diffing\nits log:\n%s",
			hold, header, got.Status, got.Diffing, stderr.Bytes())
	}
}

// proxiedDiscovery writes, in a temporary folder of its own, the
// companion's discovery file with the proxy's port and without its stdio
// command, named for this process (the client's parent, which the real
// client takes for its IDE). It returns the folder, the client's TMPDIR.
func proxiedDiscovery(t *testing.T, srv *Server, proxy int) string {
	t.Helper()
	b, err := os.ReadFile(srv.DiscoveryPath())
	if err != nil {
		t.Fatal(err)
	}
	var disc map[string]any
	if err := json.Unmarshal(b, &disc); err != nil {
		t.Fatal(err)
	}
	disc["port"] = proxy
	delete(disc, "stdio")
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "gemini", "ide")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(disc)
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("gemini-ide-server-%d-%d.json", os.Getpid(), proxy)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return tmp
}

// lateProxy listens on loopback and passes each connection to the
// companion on port, connecting upstream at once; a connection whose first
// request is a tools/list is held for hold first. It rewrites the Host the
// client names (the proxy's port) to the companion's, which the guard
// checks. It returns its port.
func lateProxy(t *testing.T, port int, hold time.Duration) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	own := ln.Addr().(*net.TCPAddr).Port
	from, to := []byte("127.0.0.1:"+strconv.Itoa(own)), []byte("127.0.0.1:"+strconv.Itoa(port))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
				if err != nil {
					return
				}
				defer up.Close()
				go func() {
					io.Copy(c, up)
					c.Close()
				}()
				buf := make([]byte, 64<<10)
				for first := true; ; first = false {
					n, err := c.Read(buf)
					if n > 0 {
						if first && bytes.Contains(buf[:n], []byte(`"tools/list"`)) {
							time.Sleep(hold) // the late client's silence
						}
						if _, werr := up.Write(bytes.ReplaceAll(buf[:n], from, to)); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return own
}
