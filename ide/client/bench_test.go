package client

import (
	"context"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// BenchmarkConnectFirstContext measures a fresh client from nothing to the
// first context, against our companion in process: discovery, initialize,
// tools/list, the GET stream and its first ide/contextUpdate.
func BenchmarkConnectFirstContext(b *testing.B) {
	e := startCompanion(b)
	f := e.file("main.go", "package main\n")
	e.srv.Focus(f, &ide.Cursor{Line: 1, Character: 1}, "")
	o := e.options(e.ws)
	b.ResetTimer()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, _, err := Connect(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.WaitContext(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		b.StopTimer()
		c.Close(context.Background())
		b.StartTimer()
	}
}
