package extmcp

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extension"
)

// TestCatalogInServerOrder: the catalog lists the servers in one order
// in every Manager (every gemkit mcp), whatever order they were synced
// in. Two servers of an extension that list the same tool name share
// one plain name, which the first keeps; in the map's order that was
// one server in one session and the other in the next.
func TestCatalogInServerOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var specs []Spec
	var hosts []string
	for _, name := range []string{"d", "a", "c", "b"} {
		srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "same", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		t.Cleanup(ts.Close)
		hosts = append(hosts, strings.TrimPrefix(ts.URL, "http://"))
		specs = append(specs, Spec{Extension: "x", Server: name, URL: ts.URL + "/mcp", Transport: TransportHTTP})
	}
	for i := range specs {
		specs[i].Widening = extension.Widening{Hosts: hosts}
	}
	for round := range 6 {
		m := NewManager(Config{Timeout: 10 * time.Second, Environ: []string{}})
		rand.Shuffle(len(specs), func(i, j int) { specs[i], specs[j] = specs[j], specs[i] })
		m.Sync(specs)
		tools, failed := m.Tools(ctx)
		m.Close()
		if len(failed) > 0 {
			t.Fatalf("round %d: %v", round, failed[0].Err)
		}
		var order []string
		for _, tool := range tools {
			order = append(order, tool.Spec.Server)
		}
		if !slices.Equal(order, []string{"a", "b", "c", "d"}) {
			t.Fatalf("round %d: the servers' tools in the order %q, want a, b, c, d", round, order)
		}
	}
}
