package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// TestServeStdioBadLines: a line that is not a JSON-RPC 2.0 message gets
// JSON-RPC's error answer (under the request's id where it has one),
// and the session goes on: the ping after it is answered. The SDK alone
// ended the whole session at such a line (a newcomer's tour typed a word
// at gemkit mcp; a client's bug would end every call under way).
func TestServeStdioBadLines(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Source: disclosure.StoreSource(extension.OpenStore(t.TempDir())), Runner: &toolrun.Runner{}})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := s.ServeStdio(ctx, inR, outW)
		outW.Close() // a session that ends is seen by the next read
		done <- err
	}()
	out := bufio.NewReader(outR)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	type answer struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	read := func() answer {
		t.Helper()
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("the session ended: %v", err)
		}
		var a answer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		return a
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	read()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, tc := range []struct {
		name, line, id string
		code           int
		says           string
	}{
		{name: "a word typed", line: "hello", id: "null", code: -32700, says: "not JSON"},
		{name: "cut short", line: `{"jsonrpc":"2.0","id":5,"method":`, id: "null", code: -32700, says: "not JSON"},
		{name: "an empty object", line: `{}`, id: "null", code: -32600, says: "not a JSON-RPC 2.0 message"},
		{name: "another version", line: `{"jsonrpc":"1.0","id":"a","method":"ping"}`, id: `"a"`, code: -32600, says: `"2.0"`},
		{name: "a number", line: `42`, id: "null", code: -32600, says: "not a JSON-RPC 2.0 message"},
		{name: "an id of the wrong kind", line: `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, id: "null", code: -32600, says: "not a JSON-RPC 2.0 message"},
	} {
		send(tc.line)
		a := read()
		if a.Error == nil || a.Error.Code != tc.code || string(a.ID) != tc.id || !strings.Contains(a.Error.Message, tc.says) {
			t.Errorf("%s: answered %+v (id %s), want code %d under id %s saying %q", tc.name, a.Error, a.ID, tc.code, tc.id, tc.says)
		}
		send(`{"jsonrpc":"2.0","id":` + jsonInt(100+i) + `,"method":"ping"}`)
		if a := read(); a.Error != nil || string(a.ID) != jsonInt(100+i) {
			t.Fatalf("%s: the ping after it: %+v (id %s)", tc.name, a.Error, a.ID)
		}
	}
	// Two messages on one line, the first not one: the second is read.
	send(`{"jsonrpc":"1.0"} {"jsonrpc":"2.0","id":200,"method":"ping"}`)
	if a := read(); a.Error == nil || a.Error.Code != -32600 {
		t.Errorf("the bad half: %+v", a.Error)
	}
	if a := read(); a.Error != nil || string(a.ID) != "200" {
		t.Errorf("the good half: %+v (id %s)", a.Error, a.ID)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("the session ended with %v", err)
	}
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }
