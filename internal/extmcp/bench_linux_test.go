package extmcp_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// BenchmarkCall: a tools/call of server-everything's echo through the
// Manager (the server in the sandbox) beside the same server started
// bare and called through the same client, in one run.
func BenchmarkCall(b *testing.B) {
	s := newSetup(b, 30*time.Second)
	every := s.spec("everything", s.script("server-everything"))
	args := json.RawMessage(`{"message":"bench"}`)
	b.Run("sandboxed", func(b *testing.B) {
		s.m.Sync([]extmcp.Spec{every})
		if _, failed := s.m.Tools(context.Background()); len(failed) > 0 {
			b.Fatal(failed[0].Err)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := s.m.Call(context.Background(), every.Key(), "echo", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		c := bare(b, s.script("server-everything"), s.ws)
		b.ResetTimer()
		for range b.N {
			if _, err := c.CallToolRaw(context.Background(), "echo", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	s.m.Close()
}

// BenchmarkColdStart: from nothing to the tool list of server-everything,
// in the sandbox and bare.
func BenchmarkColdStart(b *testing.B) {
	s := newSetup(b, 30*time.Second)
	every := s.spec("everything", s.script("server-everything"))
	b.Run("sandboxed", func(b *testing.B) {
		for i := range b.N {
			sp := every
			sp.Server = "everything" + string(rune('a'+i%26))
			s.m.Sync([]extmcp.Spec{sp})
			if _, failed := s.m.Tools(context.Background()); len(failed) > 0 {
				b.Fatal(failed[0].Err)
			}
		}
		s.m.Sync(nil)
	})
	b.Run("bare", func(b *testing.B) {
		for range b.N {
			c := bare(b, s.script("server-everything"), s.ws)
			if _, err := c.ListTools(context.Background()); err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	s.m.Close()
}

// bare starts node script in ws outside any sandbox and connects to it.
func bare(b *testing.B, script, ws string) *mcpclient.Client {
	b.Helper()
	cmd := exec.Command("node", script)
	cmd.Dir = ws
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c, err := mcpclient.Stdio(context.Background(), out, in, mcpclient.Options{Name: "bench", Version: "1"})
	if err != nil {
		b.Fatal(err)
	}
	return c
}
