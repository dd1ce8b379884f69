package mcpclient

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type note struct{ method, params string }

// TestNotifyingReader: on stdio every notification reaches Notify in
// order, and those the SDK does not know are kept from it; responses,
// requests and the standard notifications pass on unchanged.
func TestNotifyingReader(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","method":"ide/contextUpdate","params":{"workspaceState":{"openFiles":[]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":"x","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"ide/diffAccepted","params":{"filePath":"/a","content":"b"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"method":"not a notification"}}`,
	}, "\n") + "\n"
	var got []note
	r := &notifyingReader{src: bufio.NewReader(strings.NewReader(in)), notify: func(m string, p json.RawMessage) {
		got = append(got, note{m, string(p)})
	}}
	// One byte at a time, as a reader may be read.
	passed, err := io.ReadAll(iotest.OneByteReader(r))
	if err != nil {
		t.Fatal(err)
	}
	want := []note{
		{"ide/contextUpdate", `{"workspaceState":{"openFiles":[]}}`},
		{"notifications/tools/list_changed", ``},
		{"ide/diffAccepted", `{"filePath":"/a","content":"b"}`},
	}
	if len(got) != len(want) {
		t.Fatalf("notified %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("notification %d: %v, want %v", i, got[i], want[i])
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(passed), "\n"), "\n")
	if len(lines) != 4 || strings.Contains(string(passed), "ide/") || !strings.Contains(lines[1], "list_changed") {
		t.Errorf("passed on to the SDK:\n%s", passed)
	}
}

// TestEventReader: on Streamable HTTP the notifications are read out of
// an event stream (data lines joined, CRLF or LF, comments and ids
// skipped) while the stream passes on byte for byte.
func TestEventReader(t *testing.T) {
	stream := ": keep-alive\n\n" +
		"event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"ide/contextUpdate\",\"params\":{\"a\":1}}\r\n\r\n" +
		"data: {\"jsonrpc\":\"2.0\",\n" +
		"data: \"method\":\"ide/diffRejected\",\"params\":{\"filePath\":\"/x\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"ide/diffClosed\",\"params\":{}}\n" // not ended yet
	var got []string
	e := &eventReader{ReadCloser: io.NopCloser(iotest.HalfReader(strings.NewReader(stream))), notify: func(m string, p json.RawMessage) {
		got = append(got, m+" "+string(p))
	}}
	passed, err := io.ReadAll(e)
	if err != nil {
		t.Fatal(err)
	}
	if string(passed) != stream {
		t.Errorf("the stream changed on its way:\n%q", passed)
	}
	want := []string{`ide/contextUpdate {"a":1}`, `ide/diffRejected {"filePath":"/x"}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("notified %q, want %q", got, want)
	}
}
