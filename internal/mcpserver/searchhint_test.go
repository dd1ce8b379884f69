package mcpserver

import (
	"strings"
	"testing"
)

// TestServerToolHint: a server tool's search hint holds the forms of its
// name a model may search by, each a whole word (Claude Code matches a
// query's word in the hint as \bword\b), within the bound.
func TestServerToolHint(t *testing.T) {
	tests := []struct {
		exposed, extension, server, tool, title string
		want                                    string
	}{
		{"postman-api-mcp_getEnabledTools", "postman-api-mcp", "postman-api-mcp", "getEnabledTools", "getEnabledTools",
			"postman_api_mcp_getEnabledTools getEnabledTools get Enabled Tools postman_api_mcp postman api mcp"},
		{"cloud-run_list_services", "cloud-run", "cloud-run", "list_services", "List Services",
			"cloud_run_list_services list_services list services cloud_run cloud run"},
		{"realmcp_echo", "realmcp", "memory-srv", "echo", "Echo",
			"realmcp_echo echo realmcp memory_srv memory srv"},
		{"a_b2Cd", "a", "a", "b2Cd", "", "a_b2Cd b2Cd b2 Cd a"},
	}
	for _, tt := range tests {
		got, _ := serverToolHint(tt.exposed, tt.extension, tt.server, tt.tool, tt.title)[searchHintKey].(string)
		if got != tt.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tt.exposed, got, tt.want)
		}
	}
	long := serverToolHint("x_"+strings.Repeat("y", 3000), "x", "x", strings.Repeat("y", 3000), "")[searchHintKey].(string)
	if n := len([]rune(long)); n != maxSearchHint {
		t.Errorf("a long hint has %d characters, want it cut at %d", n, maxSearchHint)
	}
}
