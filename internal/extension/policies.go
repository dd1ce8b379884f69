package extension

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/gemkit/gemkit/internal/agenttoml"
)

// An extension's policies/*.toml, as Gemini CLI 0.61 loads them: when it
// builds the extension (ExtensionManager._buildExtension, packages/cli/
// src/config/extension-manager.ts) and finds a policies folder, it reads
// it with loadExtensionPolicies (packages/core/src/policy/config.ts),
// which calls loadPoliciesFromToml (toml-loader.ts) on it at the
// extension tier (2): every regular file of the folder whose name ends
// in .toml (readPolicyFiles: fs.readdir's entries with isFile(), so no
// link, in the order Node lists them, sorted), read as UTF-8 and parsed
// by @iarna/toml, checked against PolicyFileSchema (zod: exact-case
// keys, the others dropped); a file that fails either is skipped whole,
// a folder or file that cannot be read skips them all. Its [[rule]]s
// become rules of the policy engine and its [[safety_checker]]s
// checkers, one per tool name and command prefix; a rule or checker
// whose argsPattern does not compile as a JavaScript regular expression,
// or looks unsafe (isSafeRegExp), is dropped. Then loadExtensionPolicies
// drops every ALLOW rule (an extension may make a call need more
// approval, never less) and every rule and checker for YOLO mode. Errors
// go to the debug log only; the extension loads all the same. When the
// extension starts (ExtensionLoader.startExtension, packages/core/src/
// utils/extensionLoader.ts) the rules and checkers join the policy
// engine; a disabled extension's never do.

// Bounds of what gemkit reads of a policies folder: far above any real
// one. Gemini CLI has none; past them, gemkit cannot read what it will.
const (
	maxPolicyFiles = 1000
	maxPolicyBytes = 1 << 20
)

// PolicyRule is one rule an extension's policies add to Gemini CLI's
// policy engine.
type PolicyRule struct {
	policyMatch
	// Decision is "deny" or "ask_user" (an extension's "allow" is
	// dropped).
	Decision string
	// Subagent limits it to calls of that agent.
	Subagent string
	// Interactive limits it to interactive sessions (true) or to
	// non-interactive runs (false).
	Interactive *bool
	// AllowRedirection, for run_shell_command, lets the command redirect
	// its output without asking more.
	AllowRedirection *bool
	// DenyMessage is what Gemini CLI tells the model when it denies.
	DenyMessage string
}

// PolicyChecker is one safety checker an extension's policies add.
type PolicyChecker struct {
	policyMatch
	// Type is "in-process" (Gemini CLI's own: Name is "allowed-path" or
	// "conseca") or "external" (a program).
	Type, Name string
	// Config is its config table, as written; nil when none.
	Config *agenttoml.Table
}

// policyMatch is what a rule or checker applies to, and where it is.
type policyMatch struct {
	// File is its file, "policies/x.toml"; Index its place among the
	// file's rules (or checkers), from 1.
	File  string
	Index int
	// ToolName is the tool name as Gemini CLI matches it: "*" every
	// tool, "mcp_*" every MCP tool, "mcp_SERVER_*" every tool of the
	// server; an mcpName made part of it.
	ToolName string
	// MCPName is the MCP server it is limited to ("" none; "*" any).
	MCPName string
	HasMCP  bool
	// Priority is as written (0 when a checker sets none); Gemini CLI
	// orders it as 2 + Priority/1000, above its defaults (1.x), below the
	// workspace's (3.x), the person's (4.x) and the admin's (5.x).
	Priority float64
	// Modes are the approval modes it is limited to; none is every one.
	Modes []string
	// Annotations are the tool annotations it requires, as written.
	Annotations *agenttoml.Table
	// Pattern is the regular expression its calls' arguments must match
	// (argsPattern, or made of commandPrefix or commandRegex), "" none;
	// Prefix and Regex are those as written, Command says Regex is
	// commandRegex.
	Pattern, Prefix, Regex string
	Command                bool
	// PatternChecked: the pattern is one Gemini CLI compiles (made of a
	// prefix); otherwise it drops the rule if it does not compile as a
	// JavaScript regular expression, which gemkit does not judge.
	PatternChecked bool
}

// Policies are what an extension's policies folder gives Gemini CLI.
type Policies struct {
	// Files are the files Gemini CLI reads, "policies/x.toml".
	Files []string
	// Rules and Checkers are what joins the policy engine.
	Rules    []PolicyRule
	Checkers []PolicyChecker
	// Dropped say, in words, the rules and checkers Gemini CLI drops.
	Dropped []string
	// Skipped are the files Gemini CLI skips whole, with why.
	Skipped []PolicyProblem
	// Unsure are the files gemkit cannot read as Gemini CLI will, with
	// why: what they give Gemini CLI is not known.
	Unsure []PolicyProblem
}

// PolicyProblem is a file of the policies folder and what is wrong with
// it.
type PolicyProblem struct {
	File, Why string
	// Breaks: reading it can break Gemini CLI's TOML reading for the
	// rest of the session (agenttoml.UncertainError.Process), whether
	// the extension is enabled or not: ExtensionManager reads every
	// installed extension's policies, active or not.
	Breaks bool
}

// External are the external checkers Gemini CLI loads.
func (p *Policies) External() []PolicyChecker {
	var out []PolicyChecker
	for _, c := range p.Checkers {
		if c.Type == "external" {
			out = append(out, c)
		}
	}
	return out
}

// Empty reports whether the extension has no policies folder, or one
// that gives Gemini CLI nothing and says nothing.
func (p *Policies) Empty() bool {
	return len(p.Files) == 0 && len(p.Unsure) == 0 && len(p.Skipped) == 0
}

// Policies reads the extension's policies folder as Gemini CLI 0.61 does.
func (e *Extension) Policies() Policies {
	var p Policies
	if e.IsPlugin() {
		return p
	}
	root, err := e.Root()
	if err != nil {
		p.Unsure = append(p.Unsure, PolicyProblem{File: "policies", Why: err.Error()})
		return p
	}
	defer root.Close()
	fi, err := root.Stat("policies")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p
	case err != nil:
		p.Unsure = append(p.Unsure, PolicyProblem{File: "policies", Why: unsureRead(err)})
		return p
	case !fi.IsDir():
		// readPolicyFiles takes a file only when its path ends in .toml.
		return p
	}
	entries, err := root.ReadDir("policies")
	if err != nil {
		p.Unsure = append(p.Unsure, PolicyProblem{File: "policies", Why: unsureRead(err)})
		return p
	}
	var names []string
	for _, d := range entries {
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".toml") {
			names = append(names, d.Name())
		}
	}
	if len(names) > maxPolicyFiles {
		p.Unsure = append(p.Unsure, PolicyProblem{File: "policies", Why: fmt.Sprintf("it holds %d .toml files, more than the %d gemkit reads", len(names), maxPolicyFiles)})
		return p
	}
	texts := make([][]byte, len(names))
	for i, n := range names {
		if texts[i], err = root.ReadFile(path.Join("policies", n), maxPolicyBytes); err != nil {
			// One file Gemini CLI cannot read skips them all
			// (readPolicyFiles throws); gemkit cannot tell the same
			// of a file it cannot read.
			p.Unsure = append(p.Unsure, PolicyProblem{File: "policies/" + n, Why: unsureRead(err)})
			return p
		}
	}
	for i, n := range names {
		p.readFile("policies/"+n, texts[i])
	}
	return p
}

// unsureRead says why a part gemkit could not read is unsure.
func unsureRead(err error) string {
	return "gemkit cannot read it (" + err.Error() + "), and cannot tell what Gemini CLI reads there"
}

// readFile adds what the policy file name, of content text, gives.
func (p *Policies) readFile(name string, text []byte) {
	p.Files = append(p.Files, name)
	doc, err := agenttoml.Parse(text)
	var unsure *agenttoml.UncertainError
	switch {
	case errors.As(err, &unsure):
		p.Unsure = append(p.Unsure, PolicyProblem{File: name, Why: unsure.Error(), Breaks: unsure.Process})
		return
	case err != nil:
		p.Skipped = append(p.Skipped, PolicyProblem{File: name, Why: "TOML parsing failed: " + err.Error()})
		return
	}
	rules, checkers, problems := decodePolicyFile(doc)
	if len(problems) > 0 {
		p.Skipped = append(p.Skipped, PolicyProblem{File: name, Why: "schema validation failed: " + strings.Join(problems, "; ")})
		return
	}
	for i, r := range rules {
		p.addRule(name, i+1, r)
	}
	for i, c := range checkers {
		p.addChecker(name, i+1, c)
	}
}
