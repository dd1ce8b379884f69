package client

import (
	"context"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
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

// BenchmarkBridge measures what the stdio bridge (`gemkit ide bridge`,
// the real binary) costs a CLI against reaching the companion's port
// itself, side by side in one run: a connect from nothing to the first
// context (the bridge's process start included), and one request's round
// trip (closeDiff of a file with no diff, answered at once).
func BenchmarkBridge(b *testing.B) {
	e := startCompanion(b)
	f := e.file("main.go", "package main\n")
	e.srv.Focus(f, &ide.Cursor{Line: 1, Character: 1}, "")
	bin := gemkittest.Gemkit(b)
	bridge := Endpoint{Transport: "stdio", Source: "file", Command: bin, Args: []string{"ide", "bridge", e.srv.DiscoveryPath()}}
	direct := Endpoint{Transport: "http", Source: "file", Host: "127.0.0.1", Port: e.srv.Port(), Token: e.srv.Token()}
	o := e.options(e.ws)
	for _, ep := range []Endpoint{direct, bridge} {
		name := "http"
		if ep.Transport == "stdio" {
			name = "bridge"
		}
		b.Run("connect/"+name, func(b *testing.B) {
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				c, err := Dial(ctx, ep, o)
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
		})
		b.Run("request/"+name, func(b *testing.B) {
			ctx := context.Background()
			c, err := Dial(ctx, ep, o)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(ctx)
			// The test editor tells of each close on a channel: drained.
			done := make(chan struct{})
			defer close(done)
			go func() {
				for {
					select {
					case <-e.ed.closed:
					case <-done:
						return
					}
				}
			}()
			for b.Loop() {
				if _, _, err := c.CloseDiff(ctx, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
