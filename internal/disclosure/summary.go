package disclosure

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/extension"
)

// DefaultBudget is the summary's default size in characters (about 1,500
// tokens at four characters a token): enough for a dozen extensions in
// full, small beside a model's context.
const DefaultBudget = 6000

// MinBudget is the smallest budget Summary honours; a smaller one is
// raised to it, so the header and the line saying what was left out
// always fit.
const MinBudget = 400

// maxLine is the longest one-line description, in characters; longer ones
// are cut with an ellipsis (the full text is in the tool list or the
// doc).
const maxLine = 120

// maxSkillLine is the longest skill description in the summary. A
// skill's description says both what it does and when to use it, often
// over several lines, and the model has nothing else to decide by, so it
// is joined into one line and given more room than a tool's.
const maxSkillLine = 240

// Header opens the summary text.
const Header = "You have the following extensions available. Call a tool by the name in backquotes " +
	"(a client may add its own prefix, such as mcp_gemkit_ or mcp__gemkit__, and turn - into _); read a doc with the read_doc tool, " +
	"giving the extension's name and the doc's name."

// SkillsHeader follows Header when an extension has agent skills: the
// way to a skill's instructions, which load on demand as in Gemini CLI
// (a list of names and descriptions up front, the body when the model
// asks for it).
const SkillsHeader = " Skills are instructions for particular kinds of task: when a task matches a skill's description, " +
	"first read the skill with read_doc, giving the extension's name and skill: followed by the skill's name."

// noneText is the summary when nothing is enabled.
const noneText = "No gemkit extensions are enabled in this workspace."

// Summary is the progressive-disclosure summary: Text is what the model
// reads; the other fields are the same content, structured, for --json.
type Summary struct {
	Text string `json:"text"`
	// Budget is the limit Text was held to, in characters.
	Budget int `json:"budget"`
	// Extensions are the extensions Text shows, with what it shows of
	// them.
	Extensions []SummaryExtension `json:"extensions"`
	// Omitted says what the budget cut, nil when nothing was.
	Omitted *Omitted `json:"omitted,omitempty"`
}

// SummaryExtension is one extension in the summary.
type SummaryExtension struct {
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	Tools       []SummaryTool    `json:"tools"`
	Docs        []SummaryDoc     `json:"docs"`
	Skills      []SummarySkill   `json:"skills,omitempty"`
	Examples    []SummaryExample `json:"examples,omitempty"`
}

// SummarySkill is an agent skill in the summary: name and one-line
// description (its instructions load through read_doc).
type SummarySkill struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// SummaryTool is a tool in the summary: its exposed name, signature and
// one-line description.
type SummaryTool struct {
	Name        string `json:"name"`
	Tool        string `json:"tool"`
	Signature   string `json:"signature"`
	Description string `json:"description,omitempty"`
}

// SummaryDoc is a doc in the summary: name and one-line description.
type SummaryDoc struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// SummaryExample is an example in the summary, both parts on one line.
type SummaryExample struct {
	Prompt   string `json:"prompt"`
	ToolCall string `json:"toolCall"`
}

// Omitted is what the budget cut, in the order it is cut: first every
// example, then every tool's and doc's description, then the tools'
// argument lists (tools are then listed by name on one line, as docs
// are), then the skills' descriptions (skills listed by name on one
// line), then whole extensions from the end of the (name-sorted) list.
// Skills' descriptions go late because, unlike a tool's, a skill's
// description is nowhere else a model sees before it reads the skill,
// and it is what tells the model when the skill applies. All of it
// stays within a model's reach: descriptions, examples and arguments are
// in the tool list, docs and skills through read_doc.
type Omitted struct {
	Examples          bool     `json:"examples,omitempty"`
	Descriptions      bool     `json:"descriptions,omitempty"`
	Signatures        bool     `json:"signatures,omitempty"`
	SkillDescriptions bool     `json:"skillDescriptions,omitempty"`
	Extensions        []string `json:"extensions,omitempty"`
}

// Signature is a tool's call signature as the summary shows it:
// name(arg: type, ...), with '?' after arguments that may be left out
// (booleans, arrays and those the manifest makes optional), " = default"
// after those with a default, and string[] for arrays.
func Signature(name string, t *extension.Tool) string {
	parts := make([]string, len(t.Args))
	for i, a := range t.Args {
		typ := string(a.Type)
		if a.Type == extension.ArgStringArray {
			typ = "string[]"
		}
		opt := ""
		if a.Optional() {
			opt = "?"
		}
		parts[i] = a.Name + opt + ": " + typ
		if len(a.Default) > 0 {
			parts[i] += " = " + string(a.Default)
		}
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// OneLine is the first line of s with its control characters removed and
// spaces collapsed, cut at 120 characters with an ellipsis: a
// description as the summary shows it.
func OneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return cut(oneLine(s), maxLine)
}

// SkillLine is a skill's description as the summary shows it: all its
// lines joined into one, control characters removed, cut at 240
// characters with an ellipsis.
func SkillLine(s string) string { return cut(oneLine(s), maxSkillLine) }

// cut shortens s to n characters, the last an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = strings.TrimRight(string(r[:n-1]), " ") + "…"
	}
	return s
}

// oneLine collapses all whitespace to single spaces and drops control
// characters.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// full is the summary content before any cut.
func (s *Set) full() []SummaryExtension {
	out := make([]SummaryExtension, 0, len(s.Extensions))
	for _, e := range s.Extensions {
		m := e.Ext.Manifest
		se := SummaryExtension{Name: m.Name, Description: OneLine(m.Description), Tools: []SummaryTool{}, Docs: []SummaryDoc{}}
		for _, t := range s.tools {
			if t.Extension != m.Name {
				continue
			}
			se.Tools = append(se.Tools, SummaryTool{Name: t.Name, Tool: t.Tool, Signature: Signature(t.Name, t.decl), Description: OneLine(t.decl.Description)})
		}
		for _, d := range m.Docs {
			se.Docs = append(se.Docs, SummaryDoc{Name: d.Name, Description: OneLine(d.Description)})
		}
		for _, sk := range e.Skills {
			se.Skills = append(se.Skills, SummarySkill{Name: SkillName(sk), Description: SkillLine(sk.Description)})
		}
		for _, x := range m.Examples {
			se.Examples = append(se.Examples, SummaryExample{Prompt: oneLine(x.Prompt), ToolCall: s.exposeCall(m.Name, oneLine(x.ToolCall))})
		}
		out = append(out, se)
	}
	return out
}

// Summary is the summary of the set held to budget characters (counted
// in Unicode code points; budget <= 0 means DefaultBudget). What is cut
// first, and the line that then says what was left out, are described at
// Omitted. The text is deterministic: extensions by name, tools by
// exposed name, docs and examples in manifest order, skills by file.
func (s *Set) Summary(budget int) Summary {
	if budget <= 0 {
		budget = DefaultBudget
	}
	budget = max(budget, MinBudget)
	exts := s.full()
	if len(exts) == 0 {
		return Summary{Text: noneText, Budget: budget, Extensions: exts}
	}
	if text, ok := fit(exts, nil, budget); ok {
		return Summary{Text: text, Budget: budget, Extensions: exts}
	}
	om := &Omitted{Examples: true}
	for i := range exts {
		exts[i].Examples = nil
	}
	if text, ok := fit(exts, om, budget); ok {
		return Summary{Text: text, Budget: budget, Extensions: exts, Omitted: om}
	}
	om.Descriptions = true
	for i := range exts {
		for j := range exts[i].Tools {
			exts[i].Tools[j].Description = ""
		}
		for j := range exts[i].Docs {
			exts[i].Docs[j].Description = ""
		}
	}
	if text, ok := fit(exts, om, budget); ok {
		return Summary{Text: text, Budget: budget, Extensions: exts, Omitted: om}
	}
	om.Signatures = true
	if text, ok := fit(exts, om, budget); ok {
		return Summary{Text: text, Budget: budget, Extensions: exts, Omitted: om}
	}
	if hasSkills(exts) {
		om.SkillDescriptions = true
		for i := range exts {
			for j := range exts[i].Skills {
				exts[i].Skills[j].Description = ""
			}
		}
		if text, ok := fit(exts, om, budget); ok {
			return Summary{Text: text, Budget: budget, Extensions: exts, Omitted: om}
		}
	}
	// Keep the longest run of extensions from the start that fits with
	// the line naming the rest: each block is rendered once.
	blocks := make([]string, len(exts))
	sizes := make([]int, len(exts)+1)
	for i, e := range exts {
		blocks[i] = renderExt(e, om)
		sizes[i+1] = sizes[i] + runes(blocks[i])
	}
	k := len(exts)
	for ; k > 0; k-- {
		om.Extensions = names(exts[k:])
		if runes(header(exts[:k]))+1+sizes[k]+runes(omittedLine(om, budget))+2 <= budget {
			break
		}
	}
	om.Extensions = names(exts[k:])
	if len(om.Extensions) == 0 {
		om.Extensions = nil
	}
	var b strings.Builder
	b.WriteString(header(exts[:k]) + "\n")
	for _, bl := range blocks[:k] {
		b.WriteString(bl)
	}
	b.WriteString("\n" + omittedLine(om, budget) + "\n")
	return Summary{Text: b.String(), Budget: budget, Extensions: exts[:k], Omitted: om}
}

func names(exts []SummaryExtension) []string {
	out := make([]string, len(exts))
	for i, e := range exts {
		out[i] = e.Name
	}
	return out
}

func runes(s string) int { return utf8.RuneCountInString(s) }

func hasSkills(exts []SummaryExtension) bool {
	for _, e := range exts {
		if len(e.Skills) > 0 {
			return true
		}
	}
	return false
}

// header opens the summary: Header, and SkillsHeader when exts (those
// the text shows) have skills.
func header(exts []SummaryExtension) string {
	if hasSkills(exts) {
		return Header + SkillsHeader
	}
	return Header
}

// fit renders exts and reports whether the text is within budget.
func fit(exts []SummaryExtension, om *Omitted, budget int) (string, bool) {
	var b strings.Builder
	b.WriteString(header(exts) + "\n")
	for _, e := range exts {
		b.WriteString(renderExt(e, om))
	}
	if om != nil {
		b.WriteString("\n" + omittedLine(om, budget) + "\n")
	}
	return b.String(), runes(b.String()) <= budget
}

// renderExt is one extension's block of the summary text.
func renderExt(e SummaryExtension, om *Omitted) string {
	var b strings.Builder
	b.WriteString("\n- **" + e.Name + "**")
	if e.Description != "" {
		b.WriteString(": " + e.Description)
	}
	b.WriteString("\n")
	if len(e.Tools) > 0 && om != nil && om.Signatures {
		names := make([]string, len(e.Tools))
		for i, t := range e.Tools {
			names[i] = "`" + t.Name + "`"
		}
		b.WriteString("  - **Tools**: " + strings.Join(names, ", ") + "\n")
	} else if len(e.Tools) > 0 {
		b.WriteString("  - **Tools**:\n")
		for _, t := range e.Tools {
			b.WriteString("    - `" + t.Signature + "`")
			if t.Description != "" {
				b.WriteString(": " + t.Description)
			}
			b.WriteString("\n")
		}
	}
	docs := make([]namedItem, len(e.Docs))
	for i, d := range e.Docs {
		docs[i] = namedItem{d.Name, d.Description}
	}
	writeNamed(&b, "Docs", docs, om != nil && om.Descriptions)
	skills := make([]namedItem, len(e.Skills))
	for i, sk := range e.Skills {
		skills[i] = namedItem{sk.Name, sk.Description}
	}
	writeNamed(&b, "Skills", skills, om != nil && om.SkillDescriptions)
	if len(e.Examples) > 0 {
		b.WriteString("  - **Examples**:\n")
		for _, x := range e.Examples {
			b.WriteString("    - \"" + x.Prompt + "\" -> `" + x.ToolCall + "`\n")
		}
	}
	return b.String()
}

// omittedLine says what the budget left out and where to find it.
func omittedLine(om *Omitted, budget int) string {
	var cut []string
	if om.Examples {
		cut = append(cut, "the examples")
	}
	if om.Descriptions {
		cut = append(cut, "the tools' and docs' descriptions")
	}
	if om.Signatures {
		cut = append(cut, "the tools' arguments")
	}
	if om.SkillDescriptions {
		cut = append(cut, "the skills' descriptions")
	}
	if n := len(om.Extensions); n > 0 {
		word := "extensions"
		if n == 1 {
			word = "extension"
		}
		cut = append(cut, fmt.Sprintf("%d more %s (%s)", n, word, strings.Join(om.Extensions, ", ")))
	}
	where := "Every tool's full description, arguments and examples are in the tool list."
	if om.SkillDescriptions {
		where += " A skill's text says what it is for."
	}
	line := fmt.Sprintf("(Left out to stay within %d characters: %s. %s)", budget, strings.Join(cut, "; "), where)
	// The list of left-out names must not itself break the budget.
	if runes(line) > budget/2 && len(om.Extensions) > 0 {
		n := len(om.Extensions)
		cut[len(cut)-1] = fmt.Sprintf("%d more extensions", n)
		line = fmt.Sprintf("(Left out to stay within %d characters: %s. %s)", budget, strings.Join(cut, "; "), where)
	}
	return line
}

// namedItem is a doc or a skill as the summary lists it.
type namedItem struct{ name, description string }

// writeNamed lists items under label, one per line with its description,
// or, with namesOnly (the budget cut their descriptions), on one line.
func writeNamed(b *strings.Builder, label string, items []namedItem, namesOnly bool) {
	if len(items) == 0 {
		return
	}
	if namesOnly {
		names := make([]string, len(items))
		for i, it := range items {
			names[i] = "`" + it.name + "`"
		}
		b.WriteString("  - **" + label + "**: " + strings.Join(names, ", ") + "\n")
		return
	}
	b.WriteString("  - **" + label + "**:\n")
	for _, it := range items {
		b.WriteString("    - `" + it.name + "`")
		if it.description != "" {
			b.WriteString(": " + it.description)
		}
		b.WriteString("\n")
	}
}
