package mcpserver

import (
	"regexp"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/gemkit/gemkit/internal/extmcp"
)

// TestQualified: a server's URI in the gemkit-mcp form names its server
// and keeps the URI as it is, whatever the names hold.
func TestQualified(t *testing.T) {
	for _, sp := range []extmcp.Spec{{Extension: "mem", Server: "memory"}, {Extension: "a/b", Server: "c d"}} {
		for _, uri := range []string{"demo://resource/1", "file:///tmp/a b", "gemkit-doc://x/y"} {
			q := qualified(sp, uri)
			key, own, ok := unqualified(q)
			if !ok || key != sp.Key() || own != uri {
				t.Errorf("unqualified(%q) = %q, %q, %v", q, key, own, ok)
			}
		}
	}
	for _, uri := range []string{"demo://x", "gemkit-mcp://onlyext", "gemkit-mcp://ext/srv"} {
		if _, _, ok := unqualified(uri); ok {
			t.Errorf("unqualified(%q) is ok", uri)
		}
	}
}

// TestRoutes: a read goes to the server that lists the URI, else to the
// one server whose template matches, else to the one server with
// resources; two servers' templates that match are refused with the
// words that name the way out, and a qualified URI always goes to its
// server.
func TestRoutes(t *testing.T) {
	re := func(tmpl string) func() *regexp.Regexp { return sync.OnceValue(uritemplate.MustNew(tmpl).Regexp) }
	a, b := extmcp.Spec{Extension: "a", Server: "s"}.Key(), extmcp.Spec{Extension: "b", Server: "s"}.Key()
	two := &routes{
		exact: map[string]route{"demo://static/1": {a, "demo://static/1"}},
		templates: []templateRoute{
			{key: a, re: re("demo://text/{id}"), served: re("demo://text/{id}")},
			{key: b, re: re("demo://blob/{id}"), served: re("demo://blob/{id}")},
			{key: a, re: re("shared://{id}"), served: re("gemkit-mcp://a/s/shared://{id}")},
			{key: b, re: re("shared://{id}"), served: re("gemkit-mcp://b/s/shared://{id}")},
		},
	}
	one := &routes{exact: map[string]route{}, only: a}
	for _, tc := range []struct {
		rt       *routes
		uri      string
		want     route
		err      string
		notFound bool
	}{
		{rt: two, uri: "demo://static/1", want: route{a, "demo://static/1"}},
		{rt: two, uri: "demo://text/7", want: route{a, "demo://text/7"}},
		{rt: two, uri: "demo://blob/7", want: route{b, "demo://blob/7"}},
		{rt: two, uri: "gemkit-mcp://b/s/shared://9", want: route{b, "shared://9"}},
		{rt: two, uri: "shared://9", err: "the resource templates of more than one extension's MCP server match shared://9; read it as gemkit-mcp://EXTENSION/SERVER/shared://9"},
		{rt: two, uri: "other://1", notFound: true},
		{rt: one, uri: "demo://session/new", want: route{a, "demo://session/new"}},
	} {
		got, err := tc.rt.resolve(tc.uri)
		if tc.notFound {
			tc.err = mcp.ResourceNotFoundError(tc.uri).Error()
		}
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("resolve(%q) = %v, %v; want %q", tc.uri, got, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("resolve(%q) = %v, %v; want %v", tc.uri, got, err, tc.want)
		}
	}
	if !two.known("demo://text/1") || !two.known("gemkit-mcp://a/s/shared://1") || two.known("shared://1") || two.known("gemkit-mcp://a/s/demo://text/1") {
		t.Error("known: the SDK's handlers are not told apart from gemkit's own")
	}
}
