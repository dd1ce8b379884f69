package editorproto_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/companion/editorproto"
	"github.com/gemkit/gemkit/ide"
)

// printer is a companion.Events that prints what the editor reports,
// where a program would pass the reports to its companion.Server.
type printer struct{}

func (printer) Focus(path string, c *ide.Cursor, sel string) {
	fmt.Printf("focus %s %d:%d\n", path, c.Line, c.Character)
}
func (printer) Selection(path string, c ide.Cursor, sel string) {
	fmt.Printf("selection %s %d:%d %q\n", path, c.Line, c.Character, sel)
}
func (printer) Close(path string)              { fmt.Println("close", path) }
func (printer) Rename(oldPath, newPath string) { fmt.Println("rename", oldPath, newPath) }
func (printer) Delete(path string)             { fmt.Println("delete", path) }
func (printer) UpdateWorkspace(paths []string, trusted *bool) error {
	fmt.Println("workspace", paths)
	return nil
}
func (printer) DiffAccepted(filePath, content string) {
	fmt.Printf("accepted %s %q\n", filePath, content)
}
func (printer) DiffRejected(filePath string) { fmt.Println("rejected", filePath) }

// Run reads the editor's lines (here all at once; in `gemkit ide serve
// --editor stdio` they come from the editor's pipe to gemkit's stdin) and
// passes what the editor reports to the companion's Events. A request is
// answered; a malformed line gets a JSON-RPC error, and reading goes on.
func ExampleConn_Run() {
	editor := strings.NewReader(`{"jsonrpc":"2.0","method":"editor/focus","params":{"path":"/p/main.go","cursor":{"line":12,"character":5}}}
{"jsonrpc":"2.0","method":"editor/selection","params":{"path":"/p/main.go","cursor":{"line":14,"character":1},"selectedText":"func main() {"}}
{"jsonrpc":"2.0","id":1,"method":"diff/accepted","params":{"filePath":"/p/main.go","content":"package main\n"}}
{"jsonrpc":"2.0","id":2,"method":"editor/close","params":{"path":"main.go"}}
`)
	var gemkit strings.Builder
	c := editorproto.New(editor, &gemkit, editorproto.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := c.Run(context.Background(), printer{}); err != nil {
		log.Fatal(err)
	}
	fmt.Print("gemkit answered:\n", gemkit.String())
	// Output:
	// focus /p/main.go 12:5
	// selection /p/main.go 14:1 "func main() {"
	// accepted /p/main.go "package main\n"
	// gemkit answered:
	// {"jsonrpc":"2.0","id":1,"result":{}}
	// {"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params for editor/close: path must be an absolute path, not \"main.go\""}}
}

// OpenDiff is the companion asking the editor to show a proposal: a
// diff/open request, which the editor answers once the diff is shown.
// The person's answer comes later, as diff/accepted or diff/rejected.
func ExampleConn_OpenDiff() {
	toEditor, gemkitOut := io.Pipe()
	editorOut, fromEditor := io.Pipe()
	c := editorproto.New(editorOut, gemkitOut, editorproto.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx, printer{})

	// The editor: read gemkit's request, show the diff, answer it.
	go func() {
		in := bufio.NewScanner(toEditor)
		for in.Scan() {
			fmt.Println("editor read:", in.Text())
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(in.Bytes(), &req); err != nil {
				log.Fatal(err)
			}
			fmt.Fprintf(fromEditor, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", req.ID)
		}
	}()

	if err := c.OpenDiff(ctx, "/p/main.go", "package main\n"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("the diff is shown")
	// Output:
	// editor read: {"jsonrpc":"2.0","id":1,"method":"diff/open","params":{"filePath":"/p/main.go","newContent":"package main\n"}}
	// the diff is shown
}

// Serve is the whole life of `gemkit ide serve --editor stdio`: the
// companion starts, tells the editor where it serves with server/ready
// (the discovery file and the variables of the terminals the editor
// opens), and stops, removing its discovery file, once the editor closes
// its end of the pipe.
func ExampleConn_Serve() {
	ws, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(ws)
	dir, _ := os.MkdirTemp("", "discovery")
	defer os.RemoveAll(dir)

	toEditor, gemkitOut := io.Pipe()
	editorOut, fromEditor := io.Pipe()
	c := editorproto.New(editorOut, gemkitOut, editorproto.Options{})
	served := make(chan error, 1)
	go func() {
		served <- c.Serve(context.Background(), companion.Config{
			Workspace:    []string{ws},
			PID:          os.Getpid(),
			DiscoveryDir: dir,
			Logger:       slog.New(slog.DiscardHandler),
		})
		gemkitOut.Close()
	}()

	in := bufio.NewScanner(toEditor)
	in.Scan()
	var ready struct {
		Method string            `json:"method"`
		Params editorproto.Ready `json:"params"`
	}
	if err := json.Unmarshal(in.Bytes(), &ready); err != nil {
		log.Fatal(err)
	}
	fmt.Println(ready.Method, filepath.Dir(ready.Params.DiscoveryFile) == dir)
	fmt.Println(strings.Join(slices.Sorted(maps.Keys(ready.Params.Env)), " "))

	fromEditor.Close() // the editor goes
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	_, err := os.Stat(ready.Params.DiscoveryFile)
	fmt.Println("discovery file removed:", os.IsNotExist(err))
	// Output:
	// server/ready true
	// GEMINI_CLI_IDE_AUTH_TOKEN GEMINI_CLI_IDE_PID GEMINI_CLI_IDE_SERVER_PORT GEMINI_CLI_IDE_WORKSPACE_PATH
	// discovery file removed: true
}
