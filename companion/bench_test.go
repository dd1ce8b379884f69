package companion

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// reportPercentiles adds p50 and p99 of d, in milliseconds, to b's output.
func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	ms := func(p float64) float64 {
		return float64(d[int(p*float64(len(d)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// BenchmarkOpenDiffAck measures a tools/call openDiff from a Go client to
// its result, the editor answering at once.
func BenchmarkOpenDiffAck(b *testing.B) {
	ws := b.TempDir()
	srv := startServer(b, Config{Editor: ackEditor{}, Workspace: []string{ws}})
	c := dial(b, srv)
	args := map[string]any{"filePath": filepath.Join(ws, "f.go"), "newContent": "package f\n"}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if res, raw := c.callTool(ide.ToolOpenDiff, args); res.IsError {
			b.Fatalf("openDiff: %s", raw)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkDiffRoundTrip measures openDiff, the editor accepting, and the
// ide/diffAccepted notification reaching the client.
func BenchmarkDiffRoundTrip(b *testing.B) {
	ws := b.TempDir()
	srv := startServer(b, Config{Workspace: []string{ws}})
	srv.editor = acceptEditor{srv}
	c := dial(b, srv)
	args := map[string]any{"filePath": filepath.Join(ws, "f.go"), "newContent": "package f\n"}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		c.callTool(ide.ToolOpenDiff, args)
		c.next(ide.MethodDiffAccepted, 5*time.Second)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkContextUpdate measures an editor event to the client's receipt
// of the context, with the debounce cut to 1 µs so that only our own cost
// is measured.
func BenchmarkContextUpdate(b *testing.B) {
	ws := b.TempDir()
	srv := startServer(b, Config{Workspace: []string{ws}, Debounce: time.Microsecond})
	c := dial(b, srv)
	c.next(ide.MethodContextUpdate, 5*time.Second)
	p := writeFile(b, ws, "a.go", "x")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		srv.Selection(p, ide.Cursor{Line: i + 1, Character: 1}, "")
		c.next(ide.MethodContextUpdate, 5*time.Second)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkStartToDiscoveryFile measures New plus Serve until the
// discovery file is written.
func BenchmarkStartToDiscoveryFile(b *testing.B) {
	ws := b.TempDir()
	dir := b.TempDir()
	lat := make([]time.Duration, 0, b.N)
	for range b.N {
		start := time.Now()
		srv, err := New(Config{Workspace: []string{ws}, DiscoveryDir: dir, PID: 1})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		<-srv.Ready()
		lat = append(lat, time.Since(start))
		cancel()
		<-done
	}
	reportPercentiles(b, lat)
	runtime.GC()
}

type ackEditor struct{}

func (ackEditor) OpenDiff(context.Context, string, string) error          { return nil }
func (ackEditor) CloseDiff(context.Context, string) (string, bool, error) { return "", false, nil }
func (ackEditor) FileWritten(context.Context, string) error               { return nil }

// acceptEditor accepts every diff as proposed, right after showing it.
type acceptEditor struct{ srv *Server }

func (e acceptEditor) OpenDiff(_ context.Context, path, content string) error {
	go e.srv.DiffAccepted(path, content)
	return nil
}
func (acceptEditor) CloseDiff(context.Context, string) (string, bool, error) { return "", false, nil }
func (acceptEditor) FileWritten(context.Context, string) error               { return nil }
