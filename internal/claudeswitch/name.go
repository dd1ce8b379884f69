package claudeswitch

import (
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// Marketplace is the name of gemkit's directory marketplace in Claude
// Code, whose plugins are the twins.
const Marketplace = "gemkit-sandbox"

// ServerName is the one MCP server of a twin plugin, which runs gemkit
// mcp for the twin extension's servers: Claude Code names it
// plugin:P:sandbox.
const ServerName = "sandbox"

// TwinName is the name of the twin extension of the plugin name from
// the marketplace market: both joined by "-", each character an
// extension name cannot hold (extension.ValidName: letters, digits and
// -) made a "-", less any "-" in front. Two plugins whose names map to one are refused by the
// switch (Records.Claim).
func TwinName(name, market string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return r
			}
			return '-'
		}, s)
	}
	// A name starting with - would be read as a flag where the twin's
	// runners pass it.
	x := strings.TrimLeft(clean(name)+"-"+clean(market), "-")
	if !extension.ValidName(x) {
		return ""
	}
	return x
}

// TwinID is the id Claude Code knows the twin plugin of name by.
func TwinID(name string) string { return name + "@" + Marketplace }

// toolPrefix is what Claude Code 2.1.330 puts before the tools of the
// twin plugin's server: mcp__plugin_<plugin>_sandbox__, each character
// of the plugin's name that is not a letter, digit, _ or - made a _.
func toolPrefix(plugin string) string {
	n := strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return r
		}
		return '_'
	}, "plugin:"+plugin+":"+ServerName)
	return "mcp__" + n + "__"
}
