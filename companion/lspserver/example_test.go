package lspserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/companion/lspserver"
	"github.com/gemkit/gemkit/ide"
)

// languageClient is the editor's side of the pipes: LSP messages framed
// with Content-Length headers, as every language client writes them.
type languageClient struct {
	w io.Writer
	r *bufio.Reader
}

func (c *languageClient) send(msg string) {
	if _, err := fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n%s", len(msg), msg); err != nil {
		log.Fatal(err)
	}
}

// receive reads one message from the server.
func (c *languageClient) receive() map[string]any {
	h, err := textproto.NewReader(c.r).ReadMIMEHeader()
	if err != nil {
		log.Fatal(err)
	}
	n, err := strconv.Atoi(h.Get("Content-Length"))
	if err != nil {
		log.Fatal(err)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.r, body); err != nil {
		log.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		log.Fatal(err)
	}
	return m
}

// answer reads the server's messages up to the answer to request id.
func (c *languageClient) answer(id float64) map[string]any {
	for {
		if m := c.receive(); m["id"] == id && m["method"] == nil {
			return m
		}
	}
}

// pipes connects a Server to a languageClient.
func pipes(o lspserver.Options) (*lspserver.Server, *languageClient, func()) {
	fromServer, serverOut := io.Pipe()
	serverIn, toServer := io.Pipe()
	s := lspserver.New(serverIn, serverOut, o)
	return s, &languageClient{w: toServer, r: bufio.NewReader(fromServer)}, func() { toServer.Close(); fromServer.Close() }
}

// Serve is the whole life of `gemkit ide serve --editor lsp`: the
// companion starts once initialize has named the workspace, writes its
// discovery file, and stops, removing it, on the client's shutdown.
func ExampleServer_Serve() {
	ws, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(ws)
	dir, _ := os.MkdirTemp("", "discovery")
	defer os.RemoveAll(dir)
	discoveryFiles := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "gemini-ide-server-*.json"))
		return len(m)
	}

	s, client, closeClient := pipes(lspserver.Options{Logger: slog.New(slog.DiscardHandler)})
	defer closeClient()
	served := make(chan error, 1)
	go func() {
		served <- s.Serve(context.Background(), companion.Config{
			DiscoveryDir: dir,
			Logger:       slog.New(slog.DiscardHandler),
		})
	}()

	client.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":%d,"clientInfo":{"name":"Neovim"},"workspaceFolders":[{"uri":"file://%s","name":"ws"}],"capabilities":{"workspace":{"applyEdit":true}}}}`, os.Getpid(), ws))
	init := client.answer(1)["result"].(map[string]any)
	fmt.Println("server:", init["serverInfo"].(map[string]any)["name"])
	client.send(`{"jsonrpc":"2.0","method":"initialized","params":{}}`)
	fmt.Println("discovery files:", discoveryFiles())

	client.send(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`)
	client.answer(2)
	fmt.Println("discovery files after shutdown:", discoveryFiles())
	client.send(`{"jsonrpc":"2.0","method":"exit"}`)
	fmt.Println("Serve:", <-served)
	// Output:
	// server: gemkit
	// discovery files: 1
	// discovery files after shutdown: 0
	// Serve: <nil>
}

// printer is a companion.Events that prints what the language client
// reports, where Serve passes the reports to its companion.
type printer struct{}

func (printer) Focus(path string, c *ide.Cursor, sel string) {
	if c == nil {
		fmt.Println("focus", filepath.Base(path))
		return
	}
	fmt.Printf("focus %s %d:%d\n", filepath.Base(path), c.Line, c.Character)
}
func (printer) Selection(path string, c ide.Cursor, sel string) {
	fmt.Printf("selection %s %d:%d %q\n", filepath.Base(path), c.Line, c.Character, sel)
}
func (printer) Close(path string)                                   { fmt.Println("close", filepath.Base(path)) }
func (printer) Rename(oldPath, newPath string)                      {}
func (printer) Delete(path string)                                  {}
func (printer) UpdateWorkspace(paths []string, trusted *bool) error { return nil }
func (printer) DiffAccepted(filePath, content string)               {}
func (printer) DiffRejected(filePath string)                        {}

// Run serves one language client with a companion of the program's own,
// started by the StartFunc once initialize has said who the client is.
// The documents the client opens become the open files, and a request
// at a position (here documentHighlight, which clients send as the
// cursor rests) moves the cursor in the active file, 1-based as the IDE
// protocol counts.
func ExampleServer_Run() {
	ws, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(ws)
	main := filepath.Join(ws, "main.go")
	if err := os.WriteFile(main, []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		log.Fatal(err)
	}

	s, client, closeClient := pipes(lspserver.Options{Logger: slog.New(slog.DiscardHandler)})
	defer closeClient()
	ran := make(chan error, 1)
	go func() {
		ran <- s.Run(context.Background(), func(in lspserver.Init) (companion.Events, error) {
			fmt.Println("client:", in.ClientName, "workspace:", filepath.Base(in.Workspace[0]) == filepath.Base(ws))
			return printer{}, nil
		})
	}()

	client.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":%d,"clientInfo":{"name":"Neovim"},"workspaceFolders":[{"uri":"file://%s","name":"ws"}],"capabilities":{}}}`, os.Getpid(), ws))
	client.answer(1)
	client.send(`{"jsonrpc":"2.0","method":"initialized","params":{}}`)
	client.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file://%s","languageId":"go","version":1,"text":"package main\n\nfunc main() {}\n"}}}`, main))
	client.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"textDocument/documentHighlight","params":{"textDocument":{"uri":"file://%s"},"position":{"line":2,"character":5}}}`, main))
	client.answer(2)
	client.send(`{"jsonrpc":"2.0","id":3,"method":"shutdown"}`)
	client.answer(3)
	client.send(`{"jsonrpc":"2.0","method":"exit"}`)
	fmt.Println("Run:", <-ran)
	// Output:
	// client: Neovim workspace: true
	// focus main.go
	// selection main.go 3:6 ""
	// Run: <nil>
}
