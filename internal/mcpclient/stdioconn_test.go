package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestDecodeLine: a server's line decodes to the message the SDK's own
// decoder (jsonrpc.DecodeMessage) makes of it, and what that refuses is
// refused.
func TestDecodeLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		batch      int // messages in a batch; 0: one message
		bad        bool
	}{
		{name: "request", line: `{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"x":1}}`},
		{name: "string id", line: `{"jsonrpc":"2.0","id":"a-1","method":"roots/list"}`},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`},
		{name: "method empty", line: `{"jsonrpc":"2.0","id":1,"method":""}`},
		{name: "result", line: `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}`},
		{name: "error", line: `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad params","data":{"why":"x"}}}`},
		{name: "spaces around", line: "  {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n"},
		{name: "batch", line: `[{"jsonrpc":"2.0","method":"notifications/progress","params":{}},{"jsonrpc":"2.0","id":2,"result":{}}]`, batch: 2},
		{name: "version missing", line: `{"id":3,"result":{}}`, bad: true},
		{name: "version 1.0", line: `{"jsonrpc":"1.0","id":3,"result":{}}`, bad: true},
		{name: "response without id", line: `{"jsonrpc":"2.0","result":{}}`, bad: true},
		{name: "id an object", line: `{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`, bad: true},
		{name: "not json", line: `hello from the server's banner`, bad: true},
		{name: "empty batch", line: `[]`, bad: true},
		{name: "batch with garbage", line: `[{"jsonrpc":"2.0","id":2,"result":{}}, 3]`, bad: true},
		// Member names are matched as written, as JSON-RPC has them and
		// the SDK reads them since go-sdk#805: a name in another case is
		// not the member, so no second "method" or "id" can be slipped
		// past the first.
		{name: "id in another case", line: `{"jsonrpc":"2.0","ID":3,"result":{}}`, bad: true},
		{name: "method in another case too", line: `{"jsonrpc":"2.0","id":1,"method":"roots/list","Method":"sampling/createMessage"}`},
		{name: "id in another case too", line: `{"jsonrpc":"2.0","id":1,"Id":7,"result":{}}`},
		{name: "error fields in another case", line: `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"Code":1,"message":"bad","MESSAGE":"other"}}`},
		{name: "method null", line: `{"jsonrpc":"2.0","id":5,"method":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeLine([]byte(tc.line))
			if tc.bad {
				if err == nil {
					t.Fatalf("decoded %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.batch > 0 {
				if len(got) != tc.batch {
					t.Fatalf("%d messages, want %d", len(got), tc.batch)
				}
				return
			}
			want, err := jsonrpc.DecodeMessage([]byte(strings.TrimSpace(tc.line)))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !sameMessage(got[0], want) {
				t.Fatalf("decoded %#v, the SDK %#v", got, want)
			}
		})
	}
}

// sameMessage compares two messages by their encoding, as they go on the
// wire again.
func sameMessage(a, b jsonrpc.Message) bool {
	ea, err1 := jsonrpc.EncodeMessage(a)
	eb, err2 := jsonrpc.EncodeMessage(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	return json.Unmarshal(ea, &va) == nil && json.Unmarshal(eb, &vb) == nil && reflect.DeepEqual(va, vb)
}

// TestStdioConn: blank lines are skipped, a notification reaches notify
// (and, when the SDK does not know it, only notify), a line longer than
// the read buffer arrives whole, a batch comes one message at a time, and
// Close ends a read under way.
func TestStdioConn(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	input := "\n  \n" +
		`{"jsonrpc":"2.0","method":"ide/contextUpdate","params":{"a":1}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"result":{"text":"` + long + `"}}` + "\n" +
		`[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":3,"result":{}}]` + "\n"
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(input))
	}()
	var notified []string
	conn, _ := (&stdioTransport{out: bufio.NewReaderSize(pr, 64<<10), closer: pr, in: nopWriteCloser{io.Discard}, notify: func(m string, _ json.RawMessage) {
		notified = append(notified, m)
	}}).Connect(context.Background())
	var got []string
	for range 4 {
		m, err := conn.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *jsonrpc.Request:
			got = append(got, m.Method)
		case *jsonrpc.Response:
			if m.ID.Raw() == int64(1) && !strings.Contains(string(m.Result), long) {
				t.Fatalf("a long result cut to %d bytes", len(m.Result))
			}
			got = append(got, "response")
		}
	}
	if want := []string{"notifications/message", "response", "response", "response"}; !reflect.DeepEqual(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
	if want := []string{"ide/contextUpdate", "notifications/message"}; !reflect.DeepEqual(notified, want) {
		t.Errorf("notified %v, want %v", notified, want)
	}
	done := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		done <- err
	}()
	conn.Close()
	if err := <-done; err == nil {
		t.Fatal("a read went on after Close")
	} else if !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, io.EOF) {
		t.Errorf("read after Close: %v, want the closed pipe's end", err)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// BenchmarkDecodeLine is a tools/call line decoded by decodeLine beside
// the SDK's jsonrpc.DecodeMessage (which, in go-sdk v1.8.0, goes through
// a fresh 32 KiB buffer for each of its two decodes).
func BenchmarkDecodeLine(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":932,"method":"tools/call","params":{"name":"realmcp_echo","arguments":{"message":"bench"}}}`)
	b.Run("gemkit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeLine(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// scriptedServer answers a client on stdio as a server would: initialize
// (revision rev), and tools/call by the tool's name: "echo" with a result
// written with spaces, "fail" with a JSON-RPC error, "number" with a
// result that is not an object, "slow" never (the
// notifications/cancelled that follows goes to cancelled), "die" by
// closing its stdout, "progress" with three progress notifications for
// the call's token and its result in one write, then a fourth.
func scriptedServer(t *testing.T, rev string, ids, cancelled chan string) (*os.File, *os.File) {
	t.Helper()
	cin, sin, err := os.Pipe() // client writes sin... server reads cin
	if err != nil {
		t.Fatal(err)
	}
	sout, cout, err := os.Pipe() // server writes cout, client reads sout
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(cin)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name      string          `json:"name"`
					RequestID json.RawMessage `json:"requestId"`
					Meta      struct {
						ProgressToken json.RawMessage `json:"progressToken"`
					} `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			reply := func(s string) { io.WriteString(cout, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,`+s+"}\n") }
			switch m.Method {
			case "initialize":
				reply(`"result":{"protocolVersion":"` + rev + `","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`)
			case "notifications/cancelled":
				cancelled <- string(m.Params.RequestID)
			case "tools/call":
				ids <- string(m.ID)
				switch m.Params.Name {
				case "echo":
					reply(`"result": {"content": [ {"type": "text", "text": "hi"} ], "isError": true}`)
				case "fail":
					reply(`"error":{"code":-32602,"message":"no such tool: fail"}`)
				case "number":
					reply(`"result":5`)
				case "die":
					cout.Close()
				case "progress":
					var b strings.Builder
					for i := 1; i <= 4; i++ {
						if i == 4 {
							b.WriteString(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[]}}` + "\n")
						}
						fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":3}}`+"\n", m.Params.Meta.ProgressToken, i)
					}
					io.WriteString(cout, b.String())
				}
			}
		}
	}()
	t.Cleanup(func() { cin.Close(); cout.Close() })
	return sout, sin
}

// TestDirectCalls: on stdio, a tool call of the revisions up to
// 2025-11-25 goes without the SDK, under an id of its own, and comes back
// as the SDK's way gives it (compact); an error, a cancelled call (with
// notifications/cancelled) and a server gone mid-call end it as they end
// the SDK's call. A session of 2026-07-28 calls through the SDK.
func TestDirectCalls(t *testing.T) {
	ctx := context.Background()
	ids, cancelled := make(chan string, 8), make(chan string, 8)
	out, in := scriptedServer(t, "2025-06-18", ids, cancelled)
	c, err := Stdio(ctx, out, in, Options{Name: "t", Version: "1", ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.CallToolRaw(ctx, "echo", json.RawMessage(`{}`), nil)
	if err != nil || string(raw) != `{"content":[{"type":"text","text":"hi"}],"isError":true}` {
		t.Fatalf("echo: %s %v", raw, err)
	}
	if id := <-ids; !strings.HasPrefix(id, `"`+directPrefix) {
		t.Errorf("the call went with id %s, not a direct one", id)
	}
	if _, err := c.CallToolRaw(ctx, "fail", nil, nil); err == nil || !strings.Contains(err.Error(), `calling "tools/call": no such tool: fail`) {
		t.Errorf("fail: %v", err)
	}
	<-ids
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		<-ids
		cancel()
	}()
	if _, err := c.CallToolRaw(cctx, "slow", nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("slow, cancelled: %v", err)
	}
	select {
	case id := <-cancelled:
		if !strings.HasPrefix(id, `"`+directPrefix) {
			t.Errorf("notifications/cancelled named %s", id)
		}
	case <-time.After(30 * time.Second):
		t.Error("no notifications/cancelled for the cancelled call")
	}
	if _, err := c.CallToolRaw(ctx, "die", nil, nil); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("die: %v", err)
	}
	if ended, _ := c.Ended(); !gemkittest.Poll(30*time.Second, 10*time.Millisecond, func() bool { ended, _ = c.Ended(); return ended }) {
		t.Error("the session did not end with the server's stdout")
	}

	// 2026-07-28: the SDK's way.
	ids2 := make(chan string, 8)
	out, in = scriptedServer(t, "2026-07-28", ids2, make(chan string, 8))
	c2, err := Stdio(ctx, out, in, Options{Name: "t", Version: "1", ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if c2.direct != nil {
		t.Error("a session of 2026-07-28 makes direct calls")
	}
	if _, err := c2.CallToolRaw(ctx, "echo", json.RawMessage(`{}`), nil); err != nil {
		t.Fatalf("echo, 2026-07-28: %v", err)
	}
	if id := <-ids2; strings.HasPrefix(id, `"`+directPrefix) {
		t.Errorf("a call of 2026-07-28 went with the direct id %s", id)
	}
}

// TestProgressBeforeAnswer: on stdio, a server's progress notifications
// reach Options.Progress in the order it wrote them, each before the
// answer it wrote after them, whether the call goes directly or through
// the SDK (2026-07-28), whose own goroutine handed them on after the
// answer at times: the first of 200 calls had then seen it.
func TestProgressBeforeAnswer(t *testing.T) {
	ctx := context.Background()
	for _, rev := range []string{"2025-06-18", "2026-07-28"} {
		var mu sync.Mutex
		var got []string
		out, in := scriptedServer(t, rev, make(chan string, 1000), make(chan string, 8))
		c, err := Stdio(ctx, out, in, Options{Name: "t", Version: "1", ProtocolVersion: "2025-06-18",
			Progress: func(token any, p, total float64, _ string) {
				mu.Lock()
				got = append(got, fmt.Sprint(token, " ", p, "/", total))
				mu.Unlock()
			}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := range 200 {
			token := fmt.Sprint("tok-", i)
			if _, err := c.CallToolRaw(ctx, "progress", nil, token); err != nil {
				t.Fatalf("%s: %v", rev, err)
			}
			mu.Lock()
			seen := slices.Clone(got)
			got = nil
			mu.Unlock()
			// The fourth, written after the answer, may have come too;
			// the last call's may come during the next.
			if len(seen) > 0 && strings.HasSuffix(seen[0], " 4/3") {
				seen = seen[1:]
			}
			want := []string{token + " 1/3", token + " 2/3", token + " 3/3"}
			if len(seen) < 3 || !slices.Equal(seen[:3], want) {
				t.Fatalf("%s, call %d: progress at the answer %q, want %q first", rev, i, seen, want)
			}
		}
	}
}
