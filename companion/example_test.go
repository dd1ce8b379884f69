package companion_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

// myEditor would show diffs in a real editor.
type myEditor struct{ ev companion.Events }

func (e *myEditor) OpenDiff(ctx context.Context, filePath, newContent string) error {
	// Show the diff, then later: e.ev.DiffAccepted(filePath, finalText)
	// or e.ev.DiffRejected(filePath).
	return nil
}

func (e *myEditor) CloseDiff(ctx context.Context, filePath string) (string, bool, error) {
	return "", false, nil
}

func (e *myEditor) FileWritten(ctx context.Context, path string) error { return nil }

// A Go program embedding a companion: serve the current directory until
// interrupted, and tell the companion what the person does.
func Example() {
	wd, _ := os.Getwd()
	ed := &myEditor{}
	srv, err := companion.New(companion.Config{
		Workspace: []string{wd},
		IDEInfo:   ide.IDEInfo{Name: "myeditor", DisplayName: "My Editor"},
		PID:       os.Getpid(),
		Editor:    ed,
	})
	if err != nil {
		log.Fatal(err)
	}
	ed.ev = srv // the Server implements companion.Events
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-srv.Ready()
		fmt.Println("serving", srv.URL(), "discovery file", srv.DiscoveryPath())
		srv.Focus(wd+"/main.go", &ide.Cursor{Line: 1, Character: 1}, "")
	}()
	if err := srv.Serve(ctx); err != nil {
		log.Fatal(err)
	}
}

// Start serves a companion until its context ends and returns once it is
// ready: its discovery file written, requests served on loopback. What an
// editor reports (here, the person focusing main.go) becomes the context
// every connected CLI receives.
func ExampleStart() {
	ws, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(ws)
	dir, _ := os.MkdirTemp("", "discovery")
	defer os.RemoveAll(dir)
	main := filepath.Join(ws, "main.go")
	if err := os.WriteFile(main, []byte("package main\n"), 0o600); err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	srv, done, err := companion.Start(ctx, companion.Config{
		Workspace:    []string{ws},
		IDEInfo:      ide.IDEInfo{Name: "myeditor", DisplayName: "My Editor"},
		PID:          os.Getpid(),
		DiscoveryDir: dir,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	f, err := discovery.ReadOwn(srv.DiscoveryPath())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.IDEInfo.DisplayName, f.Port == srv.Port(), *f.WorkspacePath == ws)

	srv.Focus(main, &ide.Cursor{Line: 1, Character: 1}, "")
	for _, f := range srv.Context().WorkspaceState.OpenFiles {
		fmt.Println(filepath.Base(f.Path), "active:", f.IsActive)
	}

	cancel()
	fmt.Println("stopped:", <-done)
	_, err = os.Stat(srv.DiscoveryPath())
	fmt.Println("discovery file removed:", os.IsNotExist(err))
	// Output:
	// My Editor true true
	// main.go active: true
	// stopped: <nil>
	// discovery file removed: true
}
