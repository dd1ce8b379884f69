package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkFastCall: a tools/call of server-everything's echo (the real
// server, running in gemkit's sandbox) through ServeStdio over pipes, as
// gemkit mcp serves its client: the client's line read, forwarded to the
// server, and the server's answer written back. The time is mostly
// node's; what it is for is gemkit's side of a call, which runs in this
// process: its allocations (-benchmem) and its CPU (-cpuprofile), the
// bench client's few included.
func BenchmarkFastCall(b *testing.B) {
	s := everythingServer(b)
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(ctx, inR, outW) }()
	b.Cleanup(func() {
		inW.Close()
		cancel()
		<-done
		inR.Close()
		outR.Close()
		outW.Close()
	})
	out := bufio.NewReader(outR)
	send := func(line string) {
		if _, err := inW.WriteString(line + "\n"); err != nil {
			b.Fatal(err)
		}
	}
	answer := func(id string) string {
		for {
			l, err := out.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(l, `"id":`+id+`,`) {
				return l
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
	answer("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	answer("2")
	taken := s.fastTaken.Load()
	b.ReportAllocs()
	id := 10
	for b.Loop() {
		id++
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"realmcp_echo","arguments":{"message":"bench"}}}`, id))
		if got := answer(fmt.Sprint(id)); !strings.Contains(got, "Echo: bench") {
			b.Fatalf("the call answered %s", got)
		}
	}
	if s.fastTaken.Load()-taken != int64(id-10) {
		b.Fatalf("the fast path took %d of %d calls", s.fastTaken.Load()-taken, id-10)
	}
}
