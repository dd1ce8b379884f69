package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/mcpwire"
)

// TestDecodeCall: the fast path (with mcpwire's reader) reads a tools/call's members by their
// exact names, as the SDK does: a "Name" or "ID" in another case is not
// taken for the one a reader of the line sees.
func TestDecodeCall(t *testing.T) {
	for _, tc := range []struct {
		line, name, id string
		ok             bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_echo","arguments":{}}}`, "a_echo", "1", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_echo","Name":"b_other"}}`, "a_echo", "1", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"b_other"}}`, "", "1", true},
		{`{"jsonrpc":"2.0","ID":7,"id":1,"method":"tools/call","params":{"name":"a_echo"}}`, "a_echo", "1", true},
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"a_echo"}}`, "a_echo", "1", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, "", "", false},
		{`not json`, "", "", false},
	} {
		req, err := mcpwire.Read([]byte(tc.line))
		params, perr := mcpwire.ReadParams(req.Params)
		if ok := err == nil && perr == nil; ok != tc.ok {
			t.Errorf("%s: ok %v, want %v (%v %v)", tc.line, ok, tc.ok, err, perr)
			continue
		}
		if !tc.ok {
			continue
		}
		if params.Name != tc.name || string(req.ID) != tc.id {
			t.Errorf("%s: name %q id %s, want %q %s", tc.line, params.Name, req.ID, tc.name, tc.id)
		}
		if tc.line == `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"a_echo"}}` && req.HasMethod {
			t.Errorf("%s: method %q taken from \"Method\"", tc.line, req.Method)
		}
	}
	var calls fastCalls
	calls.start("1")
	calls.set("1", func() {})
	(&Server{}).cancelled(&calls, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"RequestId":1}}`))
	if !calls.end("1") {
		t.Error(`"RequestId" cancelled the call of id 1`)
	}
}

// TestIsMethod: a message's method is read by its exact member name, so
// a "Method" does not make the fast path think the client initialized.
func TestIsMethod(t *testing.T) {
	for line, want := range map[string]bool{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:                                       true,
		`{"jsonrpc":"2.0","Method":"notifications/initialized"}`:                                       false,
		`{"jsonrpc":"2.0","method":"x","Method":"notifications/initialized"}`:                          false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notifications/initialized"}}`: false,
	} {
		if got := isMethod([]byte(line), "notifications/initialized"); got != want {
			t.Errorf("%s: %v, want %v", line, got, want)
		}
	}
}

// TestWriteMessageUnencodable: a result that cannot be encoded is
// answered with an internal error, not left unanswered.
func TestWriteMessageUnencodable(t *testing.T) {
	var b strings.Builder
	writeMessage(&b, []byte("5"), "", map[string]any{"n": math.NaN()})
	if got := b.String(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"the result could not be encoded: `) || !strings.HasSuffix(got, "}}\n") {
		t.Errorf("wrote %q", got)
	}
}

// TestFastCallStaleRoutes: once the servers are to be listed again (one
// said its list changed, or a reload), a call goes to the SDK's handler,
// which lists them first, not down a route that may be gone.
func TestFastCallStaleRoutes(t *testing.T) {
	s := &Server{}
	s.serverRoutes.Store(&map[string]serverRoute{"a_echo": {key: "a/srv", tool: "echo"}})
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_echo","arguments":{}}}`)
	var calls fastCalls
	if s.fastCall(context.Background(), &calls, line, io.Discard) {
		t.Error("a call went down a route of servers not listed since")
	}
}

// TestListingReaderLongLine: a line over mcpwire.MaxMessage goes on to
// the SDK as it came, in pieces, without being held whole or read as a
// message (its tail here looks like the initialized notification), and
// the line after it is read as a message again.
func TestListingReaderLongLine(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"s":"` +
		strings.Repeat("a", mcpwire.MaxMessage) + `"}}}{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	next := `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	r := &listingReader{s: &Server{}, ctx: context.Background(), src: bufio.NewReaderSize(strings.NewReader(long+next), 64<<10), out: io.Discard}
	r.order.initialized.Store(true) // the SDK answered the session's initialize
	var got strings.Builder
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if r.initialized && got.Len() <= len(long) {
			t.Fatal("the tail of the long line was read as the initialized notification")
		}
		if err != nil {
			break
		}
	}
	if got.String() != long+next {
		t.Errorf("passed on %d bytes, want the %d that came", got.Len(), len(long+next))
	}
	if !r.initialized {
		t.Error("the line after the long one was not read")
	}
}

func TestReadLine(t *testing.T) {
	src := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 40)+"\nshort\n"), 16)
	var parts []string
	for {
		line, long, err := readLine(src, 20)
		if len(line) > 0 {
			parts = append(parts, fmt.Sprintf("%d %v", len(line), long))
		}
		if err != nil {
			break
		}
	}
	if got, want := strings.Join(parts, ","), "32 true,9 false,6 false"; got != want {
		t.Errorf("readLine read %s, want %s", got, want)
	}
}
