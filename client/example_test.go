package client_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
)

// reviewer stands for an editor in which the person accepts every
// proposal after adding a line of their own.
type reviewer struct{ ev companion.Events }

func (r *reviewer) OpenDiff(_ context.Context, filePath, newContent string) error {
	go r.ev.DiffAccepted(filePath, newContent+"// reviewed\n")
	return nil
}

func (r *reviewer) CloseDiff(context.Context, string) (string, bool, error) { return "", false, nil }

func (r *reviewer) FileWritten(context.Context, string) error { return nil }

// startEditor runs a companion on loopback as an editor would, with a
// workspace folder holding main.go and its discovery file in a folder of
// its own, the editor process being this one. It returns the workspace,
// the discovery folder and a function that stops the companion and
// removes both.
func startEditor(ed companion.Editor) (srv *companion.Server, ws, dir string, stop func()) {
	ws, err := os.MkdirTemp("", "workspace")
	if err != nil {
		log.Fatal(err)
	}
	dir, err = os.MkdirTemp("", "discovery")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, done, err := companion.Start(ctx, companion.Config{
		Workspace:    []string{ws},
		IDEInfo:      ide.IDEInfo{Name: "myeditor", DisplayName: "My Editor"},
		PID:          os.Getpid(),
		DiscoveryDir: dir,
		Editor:       ed,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	return srv, ws, dir, func() {
		cancel()
		<-done
		os.RemoveAll(ws)
		os.RemoveAll(dir)
	}
}

// options are those of a CLI started in ws by the editor process (this
// one), with an environment that names no companion.
func options(ws, dir string) client.Options {
	return client.Options{
		Cwd:         ws,
		Dir:         dir,
		IDEPID:      os.Getpid(),
		Getenv:      func(string) string { return "" },
		InContainer: func() bool { return false },
	}
}

// Connect finds the companion of the editor the CLI runs in, as Gemini
// CLI does on /ide enable, and the editor's context comes to the client.
func ExampleConnect() {
	srv, ws, dir, stop := startEditor(nil)
	defer stop()
	// The person opens main.go and puts the cursor on line 1, column 9.
	srv.Focus(filepath.Join(ws, "main.go"), &ide.Cursor{Line: 1, Character: 9}, "")

	ctx := context.Background()
	c, plan, err := client.Connect(ctx, options(ws, dir))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)
	fmt.Println(plan.IDE.DisplayName, c.State().Status, c.Endpoint().Transport)

	cx, err := c.WaitContext(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range cx.WorkspaceState.OpenFiles {
		fmt.Println(filepath.Base(f.Path), "active:", f.IsActive, "cursor:", f.Cursor.Line, f.Cursor.Character)
	}
	// Output:
	// My Editor connected http
	// main.go active: true cursor: 1 9
}

// OpenDiff shows a proposed change in the editor and returns once the
// person has answered there, with the text they accepted.
func ExampleClient_OpenDiff() {
	ed := &reviewer{}
	srv, ws, dir, stop := startEditor(ed)
	defer stop()
	ed.ev = srv

	ctx := context.Background()
	c, _, err := client.Connect(ctx, options(ws, dir))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)
	out, err := c.OpenDiff(ctx, filepath.Join(ws, "main.go"), "package main\n\nfunc main() {}\n")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("accepted:", out.Accepted)
	fmt.Print(out.Content)
	// Output:
	// accepted: true
	// package main
	//
	// func main() {}
	// // reviewed
}

// Discover is what Connect decides before it dials: the discovery file
// chosen and why, the workspace verdict and the endpoints to try.
func ExampleDiscover() {
	_, ws, dir, stop := startEditor(nil)
	defer stop()

	plan, err := client.Discover(context.Background(), options(ws, dir))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("editor:", plan.IDE.Name)
	fmt.Println("cwd inside the workspace:", plan.Workspace == nil)
	for _, ep := range plan.Endpoints {
		fmt.Println("endpoint:", ep.Transport, "from", ep.Source)
	}
	// Output:
	// editor: myeditor
	// cwd inside the workspace: true
	// endpoint: http from file
}

// NormalizeContext is what the client does to each context update, as
// the real CLI does: the newest file first, active only when it is the
// newest one, the others without cursor or selection, at most ten files.
func ExampleNormalizeContext() {
	in := ide.Context{WorkspaceState: &ide.WorkspaceState{OpenFiles: []ide.File{
		{Path: "/src/old.go", Timestamp: 100, Cursor: &ide.Cursor{Line: 7, Character: 1}},
		{Path: "/src/main.go", Timestamp: 300, IsActive: true, Cursor: &ide.Cursor{Line: 4, Character: 2}},
		{Path: "/src/util.go", Timestamp: 200},
	}}}
	out := client.NormalizeContext(in)
	for _, f := range out.WorkspaceState.OpenFiles {
		fmt.Println(f.Path, "active:", f.IsActive, "cursor:", f.Cursor != nil)
	}
	// Output:
	// /src/main.go active: true cursor: true
	// /src/util.go active: false cursor: false
	// /src/old.go active: false cursor: false
}
