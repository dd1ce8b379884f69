package langserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
)

// fakeArg makes the test binary a language server (fakeServer) instead
// of running the tests: the server's command is the binary and this.
const fakeArg = "gemkit-fake-language-server"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == fakeArg {
		fakeServer(os.Stdin, os.Stdout)
		return
	}
	os.Exit(m.Run())
}

// fakeServer speaks just enough LSP to start, and exits at a definition
// or workspace symbol request: a server that crashes while a question
// waits for it.
func fakeServer(in io.Reader, out io.Writer) {
	r := textproto.NewReader(bufio.NewReader(in))
	for {
		h, err := r.ReadMIMEHeader()
		if err != nil {
			return
		}
		n, _ := strconv.Atoi(h.Get("Content-Length"))
		body := make([]byte, n)
		if _, err := io.ReadFull(r.R, body); err != nil {
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &msg)
		var result any
		switch {
		case msg.ID == nil:
			continue
		case msg.Method == "initialize":
			result = map[string]any{"capabilities": map[string]any{"definitionProvider": true, "workspaceSymbolProvider": true}}
		case msg.Method == "textDocument/definition" || msg.Method == "workspace/symbol":
			fmt.Fprintln(os.Stderr, "fake: dying at a request")
			os.Exit(2)
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
		fmt.Fprintf(out, "Content-Length: %d\r\n\r\n%s", len(b), b)
	}
}

// A server that exits while a question waits for its answer: the answer
// says so, and whether the next question starts it again (after a first
// crash) or not (after a second), so that a model knows to ask again.
// Asked by position, one server is asked; by name, every server of the
// workspace is asked for the name.
func TestPoolCrashUnderRequest(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.zz"), []byte("hello\n"), 0o644)
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fake := Server{Name: "fake", Language: "Fake", Extensions: map[string]string{".zz": "zz"}, Command: []string{bin, fakeArg}}
	const (
		first  = "fake: it exited (exit status 2); its last output: fake: dying at a request; ask again: gemkit starts it again at the next question"
		second = "fake: it crashed twice and is not started again until gemkit's language servers restart"
	)
	for _, args := range []string{`{"file":"a.zz","line":1,"column":1}`, `{"symbol":"hello"}`} {
		p, err := New(Options{Workspace: ws, Config: Config{Servers: []Server{fake}}, LookPath: func(string) (string, error) { return bin, nil }})
		if err != nil {
			t.Fatal(err)
		}
		tl, err := codeintel.NewTools(source(p), ws, codeintel.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{first, second} {
			if got := ask(t, tl, codeintel.ToolDefinition, args); !strings.Contains(got, want) {
				t.Errorf("%s: got %q\nwant %q in it", args, got, want)
			}
		}
		tl.Close()
		p.Close()
	}
}
