package lspbroker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// counting is a Source that answers Definition with one location, says it
// has no server for .zig files, and counts the questions.
type counting struct {
	codeintel.Source
	asked atomic.Int32
}

func (c *counting) Definition(_ context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	c.asked.Add(1)
	if filepath.Ext(at.Path) == ".zig" {
		return nil, &codeintel.NoServerError{Language: "Zig", Path: at.Path, Reason: "no zls"}
	}
	if filepath.Ext(at.Path) == ".rs" {
		return nil, &codeintel.ServerError{Server: "rust-analyzer", Reason: "it crashed twice"}
	}
	return []codeintel.Location{{Path: "/ws/def.go", Range: codeintel.Range{Start: codeintel.Position{Line: 3, Character: 5}}}}, nil
}

func (c *counting) Hover(context.Context, codeintel.DocPos) (codeintel.Hover, error) {
	return codeintel.Hover{}, codeintel.ErrUnsupported
}

// inProcess returns a Start that runs a broker of src in this process,
// and a channel closed when that broker has ended; starts counts them.
func inProcess(t *testing.T, sock string, src codeintel.Source, starts *atomic.Int32) (func(context.Context) error, <-chan struct{}) {
	ended := make(chan struct{})
	return func(context.Context) error {
		if starts.Add(1) > 1 {
			t.Error("a second broker was started")
			return errors.New("second broker")
		}
		ln, err := Listen(sock)
		if err != nil {
			return err
		}
		go func() {
			(&Broker{Source: src, Workspace: "/ws"}).Serve(context.Background(), ln)
			close(ended)
		}()
		return nil
	}, ended
}

// Two clients asking at once start one broker; its answers and errors
// reach both as the Source's own; it ends when both have gone, and its
// socket is gone with it.
func TestBrokerShared(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "b.sock")
	src := &counting{}
	var starts atomic.Int32
	start, ended := inProcess(t, sock, src, &starts)
	a, b := &Client{Socket: sock, Start: start}, &Client{Socket: sock, Start: start}
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, c := range []*Client{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			locs, err := c.Definition(ctx, codeintel.DocPos{Path: "/ws/a.go"})
			if err != nil || len(locs) != 1 || locs[0].Path != "/ws/def.go" || locs[0].Range.Start.Line != 3 {
				t.Errorf("definition: %+v %v", locs, err)
			}
		}()
	}
	wg.Wait()
	if starts.Load() != 1 || src.asked.Load() != 2 {
		t.Fatalf("brokers started %d, questions %d", starts.Load(), src.asked.Load())
	}
	_, err := a.Definition(ctx, codeintel.DocPos{Path: "/ws/x.zig"})
	var ns *codeintel.NoServerError
	if !errors.As(err, &ns) || ns.Language != "Zig" || ns.Reason != "no zls" {
		t.Errorf("no server: %#v", err)
	}
	_, err = a.Definition(ctx, codeintel.DocPos{Path: "/ws/x.rs"})
	var se *codeintel.ServerError
	if !errors.As(err, &se) || se.Error() != "rust-analyzer: it crashed twice" {
		t.Errorf("server error: %#v", err)
	}
	if _, err := a.Hover(ctx, codeintel.DocPos{Path: "/ws/a.go"}); !errors.Is(err, codeintel.ErrUnsupported) {
		t.Errorf("unsupported: %v", err)
	}
	if h := a.Broker(); h.Workspace != "/ws" || h.Pid != os.Getpid() {
		t.Errorf("hello: %+v", h)
	}
	a.Close()
	select {
	case <-ended:
		t.Fatal("the broker ended with a client left")
	case <-time.After(100 * time.Millisecond):
	}
	b.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the broker did not end when its last client went")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is left: %v", err)
	}
}

// A client whose broker went is answered by a new one.
func TestBrokerReplaced(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "b.sock")
	var n atomic.Int32
	var cancel context.CancelFunc
	start := func(context.Context) error {
		n.Add(1)
		ln, err := Listen(sock)
		if err != nil {
			return err
		}
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		go (&Broker{Source: &counting{}}).Serve(ctx, ln)
		return nil
	}
	c := &Client{Socket: sock, Start: start}
	defer c.Close()
	if _, err := c.Definition(context.Background(), codeintel.DocPos{Path: "/ws/a.go"}); err != nil {
		t.Fatal(err)
	}
	cancel() // the broker is killed
	// A new broker takes over on its own time, with no event to wait on.
	var err error
	if !gemkittest.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		_, err = c.Definition(context.Background(), codeintel.DocPos{Path: "/ws/a.go"})
		return err == nil && n.Load() == 2
	}) {
		t.Fatalf("not replaced: %v (brokers %d)", err, n.Load())
	}
}

// Changed starts no broker: with none running, no server has the file.
func TestChangedStartsNothing(t *testing.T) {
	c := &Client{Socket: filepath.Join(t.TempDir(), "b.sock"), Start: func(context.Context) error {
		t.Error("a broker was started")
		return nil
	}}
	if err := c.Changed(context.Background(), []codeintel.Change{{Path: "/ws/a.go"}}); err != nil {
		t.Fatal(err)
	}
}

// A broker no client reaches ends by itself.
func TestBrokerNoClient(t *testing.T) {
	ln, err := Listen(filepath.Join(t.TempDir(), "b.sock"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		(&Broker{Source: &counting{}, FirstClient: 50 * time.Millisecond}).Serve(context.Background(), ln)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the broker waits for good")
	}
}

// A second broker on a live socket is refused.
func TestListenRunning(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "b.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Listen(sock); !errors.Is(err, ErrRunning) {
		t.Fatalf("err = %v", err)
	}
}
