package extension

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/agenttoml"
)

// The words describe, doctor and the consent text say of an extension's
// policies: what each rule changes and each checker runs, for which
// calls (ruleMatches in packages/core/src/policy/policy-engine.ts).

// PolicyTierWords say where an extension's rules stand among Gemini
// CLI's (getPolicyTier, config.ts).
const PolicyTierWords = "above Gemini CLI's defaults, below your workspace's, your own and your admin's policies and settings"

// Words say what the rule changes, for which calls, and where it is.
func (r PolicyRule) Words() string {
	calls := r.calls()
	if strings.HasPrefix(calls, "no call") {
		return "changes nothing: it matches " + calls + r.place(false)
	}
	s := "asks you before " + calls
	if r.Decision == "deny" {
		s = "denies " + calls
		if r.Pattern == "" {
			// PolicyEngine.getExcludedTools: a tool denied whatever its
			// arguments is not declared to the model.
			s += " (with no pattern, Gemini CLI leaves the tool out of those it offers the model)"
		}
		if r.DenyMessage != "" {
			s += fmt.Sprintf(", telling the model %q", r.DenyMessage)
		}
	}
	if r.AllowRedirection != nil && *r.AllowRedirection {
		s += " (allowRedirection)"
	}
	return s + r.place(false)
}

// Words say what the checker runs, for which calls, and where it is.
func (c PolicyChecker) Words() string {
	var s string
	switch {
	case c.Type == "external":
		s = fmt.Sprintf("names an external safety checker, %s, a program for Gemini CLI to start on %s: Gemini CLI 0.61 starts none (it knows no external checker by name) and denies those calls instead", agentQuote(c.Name), c.calls())
	case c.Name == "allowed-path":
		s = "checks " + c.calls() + " with Gemini CLI's own allowed-path checker: it denies a call whose path arguments leave your workspace or name .git, .env or node_modules, and asks you before one into .vscode"
		if c.Config != nil {
			s += " (config " + tableText(c.Config) + ")"
		}
	default:
		s = "checks " + c.calls() + " with Gemini CLI's own Conseca checker, when you turn it on (security.enableConseca): the model judges each call against a policy it writes from your request; off, the checker lets them be"
	}
	return s + c.place(true)
}

// place says the priority, file and place of a rule or checker.
func (m policyMatch) place(checker bool) string {
	return fmt.Sprintf(" [priority %s; %s]", agenttoml.NumberText(m.Priority), where(m.File, m.Index, checker))
}

// calls say which calls a rule or checker applies to.
func (m policyMatch) calls() string {
	var s string
	switch {
	case m.ToolName == "":
		return "no call (its toolName is empty)"
	case m.HasMCP && m.MCPName == "":
		return "no call (its mcpName is empty)"
	case m.ToolName == "*":
		s = "every tool call"
	case m.ToolName == "mcp_*":
		s = "every MCP tool call"
	case strings.HasPrefix(m.ToolName, "mcp_") && strings.HasSuffix(m.ToolName, "_*") && !strings.Contains(m.ToolName[4:len(m.ToolName)-2], "*"):
		s = "every tool of the MCP server " + agentQuote(m.ToolName[4:len(m.ToolName)-2])
	default:
		s = "calls of " + agentQuote(m.ToolName)
	}
	switch {
	case m.Prefix != "":
		s += " whose command starts with " + agentQuote(m.Prefix)
	case m.Command:
		s += " whose command matches /" + m.Regex + "/"
	case m.Regex != "":
		s += " whose arguments (as JSON) match /" + m.Regex + "/"
	}
	if m.Annotations != nil {
		s += " of tools annotated " + tableText(m.Annotations)
	}
	if len(m.Modes) > 0 {
		s += " in approval mode " + strings.Join(m.Modes, ", ")
	}
	return s
}

// calls say which calls the rule applies to.
func (r PolicyRule) calls() string {
	s := r.policyMatch.calls()
	if strings.HasPrefix(s, "no call") {
		return s
	}
	if r.Subagent != "" {
		s += " made by the agent " + agentQuote(r.Subagent)
	}
	if r.Interactive != nil {
		if *r.Interactive {
			s += " in interactive sessions"
		} else {
			s += " in non-interactive runs"
		}
	}
	return s
}

// agentQuote quotes s when it holds anything but letters, digits and
// _-.*: a name as written, with no doubt where it ends.
func agentQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.*", r)) {
			return fmt.Sprintf("%q", s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// tableText is a table in one line, {key = value, ...}, keys sorted.
func tableText(t *agenttoml.Table) string {
	keys := append([]string(nil), t.Keys()...)
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v, _ := t.Get(k)
		parts[i] = agentQuote(k) + " = " + valueText(v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func valueText(v agenttoml.Value) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case float64:
		return agenttoml.NumberText(x)
	case agenttoml.BigInt:
		return fmt.Sprint(int64(x))
	case agenttoml.Datetime:
		return x.Text
	case *agenttoml.Table:
		return tableText(x)
	case []agenttoml.Value:
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = valueText(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// PolicyLines are the lines the consent text and describe give an
// extension's policies, under headings of their own; none when it has
// no policies folder.
func (p *Policies) PolicyLines() []string {
	var lines []string
	if len(p.Rules) > 0 {
		lines = append(lines, "", "Rules it adds to Gemini CLI's policy (policies/*.toml), "+PolicyTierWords+"; they change what Gemini CLI decides and run nothing:")
		for _, r := range p.Rules {
			lines = append(lines, "  - "+r.Words())
		}
	}
	if len(p.Checkers) > 0 {
		lines = append(lines, "", "Safety checkers it adds to Gemini CLI (policies/*.toml), asked about each call no rule denies:")
		for _, c := range p.Checkers {
			lines = append(lines, "  - "+c.Words())
		}
	}
	if notes := p.Notes(); len(notes) > 0 {
		lines = append(lines, "", "Of its policies (policies/*.toml):")
		for _, n := range notes {
			lines = append(lines, "  - "+n)
		}
	}
	return lines
}

// Notes say what Gemini CLI skips and drops of the policies, and what
// gemkit cannot read as it will.
func (p *Policies) Notes() []string {
	var out []string
	for _, u := range p.Unsure {
		if u.Breaks {
			out = append(out, u.File+": it can break Gemini CLI, whether the extension is enabled or not: "+u.Why)
			continue
		}
		out = append(out, u.File+": gemkit cannot read it as Gemini CLI will: "+u.Why)
	}
	for _, s := range p.Skipped {
		out = append(out, s.File+": Gemini CLI skips the whole file: "+s.Why)
	}
	for _, d := range p.Dropped {
		out = append(out, "Gemini CLI drops "+d)
	}
	if p.regexUnchecked() {
		out = append(out, "a pattern is a JavaScript regular expression: Gemini CLI drops the rule or checker whose pattern does not compile, which gemkit does not judge")
	}
	return out
}

// regexUnchecked reports whether a rule or checker has a pattern whose
// compiling is JavaScript's to judge.
func (p *Policies) regexUnchecked() bool {
	for _, r := range p.Rules {
		if r.Pattern != "" && !r.PatternChecked {
			return true
		}
	}
	for _, c := range p.Checkers {
		if c.Pattern != "" && !c.PatternChecked {
			return true
		}
	}
	return false
}
