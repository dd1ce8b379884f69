package editorproto

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// focusTimer is the companion side of BenchmarkEventDelivery: it notes
// when each focus arrives.
type focusTimer struct {
	recorder
	at chan time.Time
}

func (f *focusTimer) Focus(string, *ide.Cursor, string) { f.at <- time.Now() }

// BenchmarkEventDelivery measures an editor event from the write of its
// line into a real pipe to the companion's Focus call, spaced out the way
// a person's editor sends them: the part of "editor event → client
// context" that the editor protocol adds (p50-µs).
func BenchmarkEventDelivery(b *testing.B) {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	conn := New(r, io.Discard, Options{Logger: slog.New(slog.DiscardHandler)})
	ev := &focusTimer{at: make(chan time.Time, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go conn.Run(ctx, ev)
	var lat []time.Duration
	n := 0
	for b.Loop() {
		n++
		line := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"editor/focus","params":{"path":"/w/f.go","cursor":{"line":%d,"character":1}}}`+"\n", n))
		// A sleep: the idle time between keystrokes is what is measured after.
		time.Sleep(2 * time.Millisecond)
		start := time.Now()
		if _, err := w.Write(line); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-ev.at).Sub(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
}
