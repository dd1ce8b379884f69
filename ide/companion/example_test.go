package companion_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/companion"
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
