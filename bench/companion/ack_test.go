//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
)

// instantEditor is the editor of an in-process benchmark: it shows every
// diff at once and accepts it right after, like the harness's stdio
// editor but without the pipe.
type instantEditor struct {
	srv *companion.Server
}

func (e *instantEditor) OpenDiff(_ context.Context, filePath, newContent string) error {
	go e.srv.DiffAccepted(filePath, newContent)
	return nil
}

func (e *instantEditor) CloseDiff(context.Context, string) (string, bool, error) {
	return "", false, nil
}

func (e *instantEditor) FileWritten(context.Context, string) error { return nil }

// BenchmarkOpenDiffAck measures gemkit's companion in process: one
// openDiff round trip per op over loopback HTTP with the Go MCP client
// (call, ack, then the diffAccepted notification). ack-ns/op is the call →
// ack part alone; the stdio editor hop is measured by the bench program.
func BenchmarkOpenDiffAck(b *testing.B) {
	ws := b.TempDir()
	ed := &instantEditor{}
	srv, err := companion.New(companion.Config{
		Workspace:    []string{ws},
		Editor:       ed,
		DiscoveryDir: b.TempDir(),
		PID:          os.Getpid(),
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	ed.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		<-served
	}()
	select {
	case <-srv.Ready():
	case err := <-served:
		b.Fatal(err)
	}
	c, err := connect(ctx, srv.DiscoveryFile())
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()

	paths := make([]string, 16)
	for i := range paths {
		paths[i] = filepath.Join(ws, fmt.Sprintf("f%d.txt", i))
	}
	var acks time.Duration
	n := 0
	for b.Loop() {
		path := paths[n%len(paths)]
		d, err := c.openDiff(ctx, path, "new content\n")
		if err != nil {
			b.Fatal(err)
		}
		if err := c.waitDiff(path, 10*time.Second); err != nil {
			b.Fatal(err)
		}
		acks += d
		n++
	}
	b.ReportMetric(float64(acks.Nanoseconds())/float64(n), "ack-ns/op")
}
