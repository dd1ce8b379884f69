package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answer is what a forwarded call's done received.
type answer struct {
	res string
	err error
}

func forward(t *testing.T, c *Client, name, args string) (chan answer, func(string) bool) {
	t.Helper()
	got := make(chan answer, 1)
	cancel, err := c.Forward(name, json.RawMessage(args), "", func(res json.RawMessage, err error) { got <- answer{string(res), err} })
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return got, cancel
}

func next(t *testing.T, ch chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("no answer within 30 s")
		return answer{}
	}
}

// TestForward: a forwarded call goes under a direct id, and done gets
// the result as the server wrote it (spaces and all, where CallToolRaw
// compacts it), or the error CallToolRaw returns, in its words: the
// server's JSON-RPC error, a result that is not an object, the server
// gone mid-call. A call given up is not answered, and the server is
// told with notifications/cancelled under the id it knows.
func TestForward(t *testing.T) {
	ctx := context.Background()
	ids, cancelled := make(chan string, 8), make(chan string, 8)
	out, in := scriptedServer(t, "2025-06-18", ids, cancelled)
	c, err := Stdio(ctx, out, in, Options{Name: "t", Version: "1", ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.CanForward() {
		t.Fatal("a stdio session of 2025-06-18 does not forward")
	}
	got, _ := forward(t, c, "echo", `{"a": "<b>"}`)
	if a := next(t, got); a.err != nil || a.res != `{"content": [ {"type": "text", "text": "hi"} ], "isError": true}` {
		t.Errorf("echo: %q %v", a.res, a.err)
	}
	if id := <-ids; !strings.HasPrefix(id, `"`+directPrefix) {
		t.Errorf("the call went with id %s, not a direct one", id)
	}
	for _, name := range []string{"fail", "number"} {
		got, _ := forward(t, c, name, `{}`)
		a := next(t, got)
		<-ids
		_, want := c.CallToolRaw(ctx, name, json.RawMessage(`{}`), nil)
		<-ids
		if a.err == nil || want == nil || a.err.Error() != want.Error() {
			t.Errorf("%s: forwarded %v, CallToolRaw %v", name, a.err, want)
		}
	}
	got, cancel := forward(t, c, "slow", `{}`)
	id := <-ids
	if !cancel("context canceled") {
		t.Error("cancel found the call over")
	}
	select {
	case named := <-cancelled:
		if named != id {
			t.Errorf("notifications/cancelled named %s, the call went as %s", named, id)
		}
	case <-time.After(30 * time.Second):
		t.Error("no notifications/cancelled for the cancelled call")
	}
	if cancel("again") {
		t.Error("a second cancel found the call under way")
	}
	got2, _ := forward(t, c, "die", `{}`)
	<-ids
	if a := next(t, got2); !errors.Is(a.err, mcp.ErrConnectionClosed) || !strings.HasPrefix(a.err.Error(), `calling "tools/call": `) {
		t.Errorf("die: %v", a.err)
	}
	select {
	case a := <-got:
		t.Errorf("the cancelled call was answered: %+v", a)
	default:
	}
	if _, err := c.Forward("echo", json.RawMessage(`{}`), "", func(json.RawMessage, error) {}); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("a call after the end: %v", err)
	}
}

// TestForwardFullPipe: a server that does not read its stdin does not
// hold up the caller of Forward: the request is written once the pipe
// has room, whole, and after the requests before it.
func TestForwardFullPipe(t *testing.T) {
	cin, sin, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sout, cout, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cin.Close(); sin.Close(); sout.Close(); cout.Close() })
	// The session as Stdio makes it, without initialize: the server's
	// stdin is never read until the test says so.
	st := &stdioTransport{out: bufio.NewReader(sout), closer: sout, in: sin}
	st.Connect(context.Background())
	c := &Client{direct: st.conn}
	if st.conn.raw == nil {
		t.Fatal("os.Pipe's write end is not taken for non-blocking")
	}
	big := `{"s":"` + strings.Repeat("x", 300<<10) + `"}`
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		for _, args := range []string{big, `{"n":2}`} {
			if _, err := c.Forward("t", json.RawMessage(args), "", func(json.RawMessage, error) {}); err != nil {
				t.Error(err)
			}
		}
	}()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("Forward blocked on a full pipe")
	}
	sc := bufio.NewScanner(cin)
	sc.Buffer(nil, 1<<20)
	var lines []string
	for len(lines) < 2 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 2 || !strings.Contains(lines[0], big) || !strings.Contains(lines[1], `"arguments":{"n":2}`) {
		t.Errorf("the server read %d lines, want the big request and then the small one", len(lines))
	}
	for _, l := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("a request is not one JSON message: %v", err)
		}
	}
}

// TestAppendCall: the request a forwarded call writes is the JSON value
// of the SDK's encoding of the same call.
func TestAppendCall(t *testing.T) {
	for _, tc := range []struct{ name, args, token string }{
		{"echo", `{"message":"<b>hi</b> & é"}`, ""},
		{"a\"b\\c\u00e9", "{\n \"x\": [1,\n2]}", "gemkit-7"},
		{"echo", "", ""},
	} {
		line := appendCall(nil, "gemkit-direct-3", tc.name, json.RawMessage(tc.args), tc.token)
		if strings.Count(string(line), "\n") != 1 || !strings.HasSuffix(string(line), "\n") {
			t.Errorf("%q: not one line: %q", tc.name, line)
		}
		var a any
		if len(tc.args) > 0 {
			a = json.RawMessage(tc.args)
		}
		params := &mcp.CallToolParams{Name: tc.name, Arguments: a}
		if tc.token != "" {
			params.SetProgressToken(tc.token)
		}
		p, _ := json.Marshal(params)
		want, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "gemkit-direct-3", "method": "tools/call", "params": json.RawMessage(p)})
		var gv, wv any
		if err := json.Unmarshal(line, &gv); err != nil {
			t.Fatalf("%q: %v: %s", tc.name, err, line)
		}
		json.Unmarshal(want, &wv)
		gb, _ := json.Marshal(gv)
		wb, _ := json.Marshal(wv)
		if string(gb) != string(wb) {
			t.Errorf("%q: wrote %s, the SDK's way %s", tc.name, line, want)
		}
	}
}
