package ide

import (
	"os"
	"path/filepath"
	"strings"
)

// An Agent is one coding agent gemkit serves as an IDE companion: where it
// keeps its folder, how it finds a companion, how gemkit recognises its
// process, and which of its files hold tokens that no tool may read.
// Agents is the one list of them; the companion, discovery, the client,
// conformance, the permission checks and the sandbox all read it, so that
// adding an agent is one entry here (and its discovery form, if new, in
// ide/discovery).
type Agent struct {
	// ID is the short name: a manifest's credentials kind, `--as`.
	ID string
	// Name is the program as a person knows it ("Qwen Code").
	Name string
	// HomeEnv is the variable that moves the agent's folder; "" when
	// none does.
	HomeEnv string
	// HomeDir is the agent's folder under the home folder (".qwen").
	HomeDir string
	// HomeEnvIsParent is set when HomeEnv names the folder that holds
	// HomeDir rather than HomeDir itself: Gemini CLI's GEMINI_CLI_HOME is
	// the ~ of its .gemini (homedir() in gemini-cli 0.61.0
	// packages/core/src/utils/paths.ts).
	HomeEnvIsParent bool
	// ExpandsTilde is set when the agent expands a leading ~ of HomeEnv
	// itself (Qwen Code's Storage.resolvePath).
	ExpandsTilde bool
	// LockDir is the folder under the agent's folder where it reads the
	// lock files that name a companion ("ide"); "" for an agent that finds
	// one some other way (Gemini CLI: discovery files in
	// os.TempDir()/gemini/ide, DiscoveryDirName).
	LockDir string
	// ClosedWhole is set when the whole folder is closed to tools:
	// Gemini CLI's holds its credentials, gemkit's records, every
	// extension and its settings.
	ClosedWhole bool
	// Credential is the file in the agent's folder that holds its login,
	// closed to tools unless a manifest names ID in
	// permissions.filesystem.credentials; "" when none (or ClosedWhole).
	Credential string
	// Package and Command name its npm package and the command it
	// installs: a client's process whose command line runs a script of
	// Package or the command Command is this agent.
	Package, Command string
}

// The agents gemkit knows, in the order their credential kinds are
// listed. Sources: gemini-cli 0.61.0 (packages/core/src/utils/paths.ts,
// packages/core/src/ide/ide-client.ts); @qwen-code/qwen-code 0.24.4
// (packages/core/src/config/storage.ts, packages/core/src/ide/ide-client.ts,
// its oauth_creds.json in packages/core/src/qwen/qwenOAuth2.ts); Claude
// Code (its ~/.claude/ide/<port>.lock and CLAUDE_CONFIG_DIR, as its VS
// Code extension writes them, and ~/.claude/.credentials.json); LLxprt
// Code (vybestack/llxprt-code packages/ide-integration/src/ide/ide-client.ts),
// which gemkit only recognises.
var (
	AgentGemini = Agent{ID: "gemini", Name: "Gemini CLI", HomeEnv: "GEMINI_CLI_HOME", HomeDir: ".gemini",
		HomeEnvIsParent: true, ClosedWhole: true, Package: "@google/gemini-cli", Command: "gemini"}
	AgentClaude = Agent{ID: "claude", Name: "Claude Code", HomeEnv: "CLAUDE_CONFIG_DIR", HomeDir: ".claude",
		LockDir: "ide", Credential: ".credentials.json", Package: "@anthropic-ai/claude-code", Command: "claude"}
	AgentQwen = Agent{ID: "qwen", Name: "Qwen Code", HomeEnv: EnvQwenHome, HomeDir: ".qwen", ExpandsTilde: true,
		LockDir: "ide", Credential: "oauth_creds.json", Package: "@qwen-code/qwen-code", Command: "qwen"}
	AgentLLxprt = Agent{ID: "llxprt", Name: "LLxprt Code", Package: "@vybestack/llxprt-code", Command: "llxprt"}

	Agents = []Agent{AgentGemini, AgentClaude, AgentQwen, AgentLLxprt}
)

// HomeVars are the variables that move the agents' folders, in the
// order of Agents.
func HomeVars() []string {
	var out []string
	for _, a := range Agents {
		if a.HomeEnv != "" {
			out = append(out, a.HomeEnv)
		}
	}
	return out
}

// Folder is the agent's folder as the agent itself resolves it in an
// environment: HomeEnv through getenv (a leading ~ expanded where the
// agent does so, a relative path taken from dir, the process's working
// folder, as Node's path functions take it), else HomeDir under home.
// An empty dir is this process's working folder. It is "" when the
// agent has no folder or the folder cannot be made absolute (no home).
func (a Agent) Folder(getenv func(string) string, home, dir string) string {
	if a.HomeDir == "" {
		return ""
	}
	v := ""
	if a.HomeEnv != "" && getenv != nil {
		v = getenv(a.HomeEnv)
	}
	if v == "" {
		if !filepath.IsAbs(home) {
			return ""
		}
		return filepath.Join(home, a.HomeDir)
	}
	if a.ExpandsTilde && (v == "~" || strings.HasPrefix(v, "~/")) {
		if !filepath.IsAbs(home) {
			return ""
		}
		v = filepath.Join(home, v[1:])
	}
	if !filepath.IsAbs(v) {
		if dir == "" {
			wd, err := os.Getwd()
			if err != nil {
				return ""
			}
			dir = wd
		}
		if !filepath.IsAbs(dir) {
			return ""
		}
		v = filepath.Join(dir, v)
	}
	v = filepath.Clean(v)
	if a.HomeEnvIsParent {
		return filepath.Join(v, a.HomeDir)
	}
	return v
}

// DefaultFolder is the agent's folder with nothing set: HomeDir under
// home, "" when home is not absolute.
func (a Agent) DefaultFolder(home string) string { return a.Folder(nil, home, "") }

// LockFolder is the folder where the agent reads lock files (LockDir in
// Folder), "" when it reads none or its folder is unknown.
func (a Agent) LockFolder(getenv func(string) string, home, dir string) string {
	if a.LockDir == "" {
		return ""
	}
	f := a.Folder(getenv, home, dir)
	if f == "" {
		return ""
	}
	return filepath.Join(f, a.LockDir)
}

// AgentOfCommand names the agent whose process runs args (a command
// line): a script inside its npm package, or its command by name. ok is
// false when none is.
func AgentOfCommand(args []string) (a Agent, script string, ok bool) {
	for _, arg := range args {
		norm := filepath.ToSlash(arg)
		base := filepath.Base(norm)
		for _, a := range Agents {
			if a.Package != "" && strings.Contains(norm, "/"+a.Package+"/") || a.Command != "" && base == a.Command {
				return a, arg, true
			}
		}
	}
	return Agent{}, "", false
}
