package mcpserver

import (
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// searchHintKey is the member of a tool's _meta that Claude Code
// 2.1.330 reads as the tool's search hint: its tool search (ToolSearch,
// keyword queries) scores a query's word found in it, as a whole word,
// beside the words of the tool's name and description, and takes its
// first 4,096 characters. Other clients pass _meta by.
const searchHintKey = "anthropic/searchHint"

// maxSearchHint bounds a hint, well under the 4,096 characters Claude
// Code reads of one.
const maxSearchHint = 1024

// serverToolHint is the search hint of an extension server's tool that
// gemkit serves as exposed. Claude Code names the tool
// mcp__gemkit__<exposed> and takes its name apart only at _ and . (and
// its server's name, gemkit, is not the extension's), so that a query
// for the name as a model is told or knows it another way finds nothing
// ("No matching deferred tools found"): the tool's name as its server
// lists it and in words (getEnabledTools, get enabled tools), the
// extension's and the server's names in words, and the served name with
// every - as _, as Codex writes it and as gemkit's summary tells a model
// a client may (postman_api_mcp_getEnabledTools, postman_api_mcp). The
// server's own title comes last.
func serverToolHint(exposed, extension, server, tool, title string) mcp.Meta {
	var words []string
	seen := map[string]bool{}
	add := func(ws ...string) {
		for _, w := range ws {
			if w = strings.Join(strings.Fields(w), " "); w != "" && !seen[strings.ToLower(w)] {
				seen[strings.ToLower(w)] = true
				words = append(words, w)
			}
		}
	}
	underscored := func(s string) string { return strings.ReplaceAll(s, "-", "_") }
	add(underscored(exposed), tool, nameWords(tool), underscored(extension), nameWords(extension))
	if server != extension {
		add(underscored(server), nameWords(server))
	}
	add(title)
	hint := strings.Join(words, " ")
	if r := []rune(hint); len(r) > maxSearchHint {
		hint = string(r[:maxSearchHint])
	}
	return mcp.Meta{searchHintKey: hint}
}

// nameWords is a name as words: split at -, _, . and spaces, and where a
// lower-case letter or a digit meets an upper-case one (getEnabledTools
// is "get Enabled Tools").
func nameWords(name string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range name {
		switch {
		case r == '-' || r == '_' || r == '.' || unicode.IsSpace(r):
			r = ' '
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
