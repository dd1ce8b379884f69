package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDetectIDE(t *testing.T) {
	tests := []struct {
		name string
		file *ide.IDEInfo
		cmd  string
		env  map[string]string
		want string // "" means refused
	}{
		{"ideInfo wins", &ide.IDEInfo{Name: "nvim", DisplayName: "Neovim"}, "", nil, "nvim"},
		{"half an ideInfo is none", &ide.IDEInfo{Name: "nvim"}, "", nil, ""},
		{"unknown terminal", nil, "", map[string]string{"TERM_PROGRAM": "iTerm.app"}, ""},
		{"vscode", nil, "/usr/share/code/code", map[string]string{"TERM_PROGRAM": "vscode"}, "vscode"},
		{"vscode fork", nil, "/opt/windsurf/windsurf", map[string]string{"TERM_PROGRAM": "vscode"}, "vscodefork"},
		{"cursor", nil, "cursor", map[string]string{"TERM_PROGRAM": "vscode", "CURSOR_TRACE_ID": "x"}, "cursor"},
		{"sublime", nil, "", map[string]string{"TERM_PROGRAM": "sublime"}, "sublimetext"},
		{"zed session", nil, "", map[string]string{"ZED_SESSION_ID": "1"}, "zed"},
		{"xcode", nil, "", map[string]string{"XCODE_VERSION_ACTUAL": "1500"}, "xcode"},
		{"jetbrains goland", nil, "/opt/goland/bin/goland", map[string]string{"TERMINAL_EMULATOR": "JetBrains-JediTerm"}, "goland"},
		{"jetbrains unknown", nil, "/opt/x/bin/x", map[string]string{"TERMINAL_EMULATOR": "JetBrains-JediTerm"}, "jetbrains"},
	}
	for _, tt := range tests {
		got := DetectIDE(tt.file, tt.cmd, envOf(tt.env))
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, name, tt.want)
		}
	}
}

func TestServerHost(t *testing.T) {
	if h := ServerHost(envOf(nil), false); h != "127.0.0.1" {
		t.Errorf("outside a container: %s", h)
	}
	if h := ServerHost(envOf(nil), true); h != "host.docker.internal" {
		t.Errorf("in a container: %s", h)
	}
	for _, k := range []string{"SSH_CONNECTION", "REMOTE_CONTAINERS", "VSCODE_REMOTE_CONTAINERS_SESSION"} {
		if h := ServerHost(envOf(map[string]string{k: "1"}), true); h != "127.0.0.1" {
			t.Errorf("container with %s: %s", k, h)
		}
	}
}

func TestNormalizeContext(t *testing.T) {
	yes := true
	files := []ide.File{
		{Path: "/old", Timestamp: 1, IsActive: true, Cursor: &ide.Cursor{Line: 1, Character: 1}, SelectedText: "x"},
		{Path: "/new", Timestamp: 3, IsActive: true, Cursor: &ide.Cursor{Line: 2, Character: 2}, SelectedText: strings.Repeat("é", 16390)},
		{Path: "/mid", Timestamp: 2, SelectedText: "y"},
	}
	for i := 0; i < 10; i++ {
		files = append(files, ide.File{Path: "/f", Timestamp: 0})
	}
	in := ide.Context{WorkspaceState: &ide.WorkspaceState{OpenFiles: files, IsTrusted: &yes}}
	out := NormalizeContext(in)
	got := out.WorkspaceState.OpenFiles
	if len(got) != 10 || got[0].Path != "/new" || got[1].Path != "/mid" || got[2].Path != "/old" {
		t.Fatalf("order %v", got[:3])
	}
	if got[2].IsActive || got[2].Cursor != nil || got[2].SelectedText != "" || got[1].SelectedText != "" {
		t.Errorf("older files keep state: %+v %+v", got[1], got[2])
	}
	if r := []rune(got[0].SelectedText); len(r) != 16384+len(ide.TruncatedSuffix) {
		t.Errorf("selection cut to %d runes", len(r))
	}
	if files[0].Cursor == nil || in.WorkspaceState.OpenFiles[0].Path != "/old" {
		t.Error("the input was modified")
	}
	// Newest not active: no file is active.
	out = NormalizeContext(ide.Context{WorkspaceState: &ide.WorkspaceState{OpenFiles: []ide.File{
		{Path: "/a", Timestamp: 5}, {Path: "/b", Timestamp: 4, IsActive: true, Cursor: &ide.Cursor{Line: 1, Character: 1}},
	}}})
	for _, f := range out.WorkspaceState.OpenFiles {
		if f.IsActive || f.Cursor != nil {
			t.Errorf("active file kept: %+v", f)
		}
	}
	// Characters outside the BMP count twice, as in JavaScript.
	if s := truncateUTF16(strings.Repeat("😀", 3), 4); s != "😀😀"+ide.TruncatedSuffix {
		t.Errorf("utf16 cut %q", s)
	}
	if s := truncateUTF16(strings.Repeat("😀", 3), 5); s != "😀😀"+ide.TruncatedSuffix {
		t.Errorf("utf16 cut through a pair %q", s)
	}
}

func TestParseCloseDiffText(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		text    *string
		content string
		ok, err bool
	}{
		{str(`{"content":"x"}`), "x", true, false},
		{str(`{"content":null}`), "", false, false},
		{str(`{}`), "", false, false},
		{nil, "", false, false},
		{str(`plain text`), "", false, true},
		{str(`{"content":3}`), "", false, true},
	}
	for _, tt := range tests {
		c, ok, err := ParseCloseDiffText(tt.text)
		if c != tt.content || ok != tt.ok || (err != nil) != tt.err {
			t.Errorf("%v: %q %v %v", tt.text, c, ok, err)
		}
	}
}

// TestClassifyDNSFailure: inside a container the CLI dials
// host.docker.internal; when that name does not resolve, the person is
// told so (and what to set), not handed the transport's error chain. The
// lookup fails in the dialer, as a real one would (which would leave the
// loopback network), so the error comes wrapped as the MCP SDK wraps it.
func TestClassifyDNSFailure(t *testing.T) {
	dns := &net.DNSError{Err: "no such host", Name: "host.docker.internal", IsNotFound: true}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: dns}
	}}}
	_, cerr := mcpclient.HTTP(context.Background(), "http://host.docker.internal:1/mcp", hc, nil, mcpclient.Options{Name: "t", Version: "1", ProtocolVersion: ide.ProtocolVersion})
	if cerr == nil {
		t.Fatal("connected through a dialer that fails")
	}
	err := classifyHTTP(fmt.Errorf("initialize: %w", cerr), 0)
	var de *DialError
	if !errors.As(err, &de) || de.Kind != "no-host" || de.Host != "host.docker.internal" {
		t.Fatalf("classified as %#v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "cannot be resolved") || !strings.Contains(msg, "stdio command") || !strings.Contains(msg, "REMOTE_CONTAINERS=true") {
		t.Errorf("message %q", msg)
	}
}
