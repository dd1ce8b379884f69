package extension

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
)

// What loadPoliciesFromToml makes of a rule or checker that passed the
// schema (packages/core/src/policy/toml-loader.ts), and what
// loadExtensionPolicies (config.ts) keeps of it.

// argsPattern is one pattern buildArgsPatterns (policy/utils.ts) makes,
// with where it came from.
type argsPattern struct {
	pattern, prefix, regex string
	// command: regex is commandRegex; checked: made of a prefix,
	// escaped, it compiles.
	command, checked bool
}

// argsPatterns is buildArgsPatterns: one pattern per command prefix
// (an empty list makes none, and so no rule), else the command regex,
// else argsPattern ("" none). JavaScript's truthiness decides: an empty
// string is no prefix and no regex.
func argsPatterns(m tomlMatch) []argsPattern {
	if m.hasPrefix && (m.prefixList || m.cmdPrefix[0] != "") {
		var out []argsPattern
		for _, p := range m.cmdPrefix {
			enc := jsonStringify(p)
			open := enc[:len(enc)-1]
			out = append(out, argsPattern{pattern: escapeRegex(`"command":`+open) + `(?:[\s"]|\\")`, prefix: p, checked: true})
		}
		return out
	}
	if m.cmdRegex != nil && *m.cmdRegex != "" {
		return []argsPattern{{pattern: `"command":"` + *m.cmdRegex, regex: *m.cmdRegex, command: true}}
	}
	if m.argsPattern != nil {
		return []argsPattern{{pattern: *m.argsPattern, regex: *m.argsPattern}}
	}
	return []argsPattern{{}}
}

// jsonStringify is JSON.stringify of a string: \" \\ \b \f \n \r \t,
// the other control characters as \u00XX, and nothing else escaped.
func jsonStringify(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// regexSpecial is escapeRegex's set (policy/utils.ts):
// /[-[\]{}()*+?.,\\^$|#\s"]/g, \s being JavaScript's white space.
func regexSpecial(r rune) bool {
	return strings.ContainsRune(`-[]{}()*+?.,\^$|#"`, r) || jsSpace(r)
}

// jsSpace is JavaScript's \s: WhiteSpace and LineTerminator.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func escapeRegex(s string) string {
	var b strings.Builder
	for _, r := range s {
		if regexSpecial(r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// nestedQuantifier is isSafeRegExp's /\([^)]*[*+?{].*\)[*+?{]/, its dot
// JavaScript's (no line terminator).
var nestedQuantifier = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\([^)]*[*+?{][^\n\r\x{2028}\x{2029}]*\)[*+?{]`)
})

// unsafePattern is why isSafeRegExp (policy/utils.ts) refuses pattern,
// "" when it does not (its first check, that the pattern compiles, is
// JavaScript's: see policyMatch.PatternChecked).
func unsafePattern(pattern string) string {
	if len(utf16.Encode([]rune(pattern))) > 2048 {
		return "is longer than 2048 characters"
	}
	if nestedQuantifier().MatchString(pattern) {
		return "nests quantifiers (a ReDoS risk, as Gemini CLI judges it)"
	}
	return ""
}

// formatMcpToolName is mcp-tool.ts's: mcp_SERVER_TOOL, with * for any.
func formatMcpToolName(server, tool string) string {
	switch {
	case server == "*" && tool == "*":
		return "mcp_*"
	case server == "*":
		return "mcp_*_" + tool
	case tool == "*":
		return "mcp_" + server + "_*"
	}
	return "mcp_" + server + "_" + tool
}

// expand makes the matches of m, one per pattern and tool name, as the
// transform does; dropped says, in words, those Gemini CLI drops for
// their pattern. checker: the tool name is made as for a checker.
func expand(file string, index int, m tomlMatch, checker bool) (out []policyMatch, dropped []string) {
	for _, ap := range argsPatterns(m) {
		for _, tool := range m.toolNames {
			pm := policyMatch{File: file, Index: index, ToolName: tool, Priority: m.priority, Modes: m.modes,
				Annotations: m.annotations, Pattern: ap.pattern, Prefix: ap.prefix, Regex: ap.regex, Command: ap.command,
				PatternChecked: ap.checked}
			if m.mcpName != nil {
				pm.MCPName, pm.HasMCP = *m.mcpName, true
			}
			switch {
			case m.mcpName == nil || *m.mcpName == "":
			case !checker:
				pm.ToolName = formatMcpToolName(*m.mcpName, tool)
			case tool != "*":
				pm.ToolName = "mcp_" + *m.mcpName + "_" + tool
			default:
				pm.ToolName = "mcp_" + *m.mcpName + "_*"
			}
			if ap.pattern != "" {
				if why := unsafePattern(ap.pattern); why != "" {
					dropped = append(dropped, fmt.Sprintf("%s for %s: its pattern %s", where(file, index, checker), tool, why))
					continue
				}
			}
			out = append(out, pm)
		}
	}
	return out, dropped
}

// where names a rule or checker by file and place.
func where(file string, index int, checker bool) string {
	if checker {
		return fmt.Sprintf("%s: safety checker %d", file, index)
	}
	return fmt.Sprintf("%s: rule %d", file, index)
}

func (p *Policies) addRule(file string, index int, r tomlRule) {
	switch {
	case r.decision == "allow":
		p.Dropped = append(p.Dropped, where(file, index, false)+": an allow rule (Gemini CLI takes none from an extension: it would approve calls for you)")
		return
	case slices.Contains(r.modes, "yolo"):
		p.Dropped = append(p.Dropped, where(file, index, false)+": a rule for YOLO mode (Gemini CLI takes none from an extension)")
		return
	}
	matches, dropped := expand(file, index, r.tomlMatch, false)
	p.Dropped = append(p.Dropped, dropped...)
	for _, m := range matches {
		pr := PolicyRule{policyMatch: m, Decision: r.decision, Interactive: r.interactive, AllowRedirection: r.allowRedirection}
		if r.subagent != nil {
			pr.Subagent = *r.subagent
		}
		if r.denyMessage != nil {
			pr.DenyMessage = *r.denyMessage
		}
		p.Rules = append(p.Rules, pr)
	}
}

func (p *Policies) addChecker(file string, index int, c tomlChecker) {
	if slices.Contains(c.modes, "yolo") {
		p.Dropped = append(p.Dropped, where(file, index, true)+": a checker for YOLO mode (Gemini CLI takes none from an extension)")
		return
	}
	matches, dropped := expand(file, index, c.tomlMatch, true)
	p.Dropped = append(p.Dropped, dropped...)
	for _, m := range matches {
		p.Checkers = append(p.Checkers, PolicyChecker{policyMatch: m, Type: c.typ, Name: c.name, Config: c.config})
	}
}
