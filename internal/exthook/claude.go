package exthook

import (
	"fmt"

	"github.com/gemkit/gemkit/internal/envmap"
)

// AgentOf is Hook.Agent for the agent the flag --agent names (gemini,
// or claude).
func AgentOf(flag string) (string, error) {
	switch flag {
	case "gemini", "":
		return "", nil
	case AgentClaude:
		return AgentClaude, nil
	}
	return "", fmt.Errorf("--agent %q is none gemkit knows: gemini or claude", flag)
}

// AgentName is the name of the agent gemkit answers in the hook's
// place, "" for Gemini CLI.
func (h *Hook) AgentName() string {
	if h.Agent == AgentClaude {
		return "Claude Code"
	}
	return ""
}

// claudeKept are the variables Claude Code 2.1.330 sets for a hook that
// name no secret and that a hook of a switched plugin keeps: whether it
// runs under Claude Code and in which session (set for every program
// Claude Code starts, with CLAUDE_PID and the session's attended flag),
// the project's folder. Of the others Claude Code sets for a plugin's
// hook, CLAUDE_ENV_FILE (SessionStart's file of variables for the
// session's later commands) never reaches it, nor the API key Claude
// Code hands some plugins' hooks, nor CLAUDE_PLUGIN_OPTION_* (the
// plugin's options, secrets among them).
var claudeKept = []string{"CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PROJECT_DIR"}

// claudeEnv adds to out, the environment of a run whose private
// temporary folder is tmp, what Claude Code 2.1.330 gives a plugin's
// command hook (its hook runner sets CLAUDE_PROJECT_DIR, and for a
// plugin's hook CLAUDE_PLUGIN_ROOT, the plugin's folder, and
// CLAUDE_PLUGIN_DATA, its data folder, created: the binary's "if(
// Vr.CLAUDE_PLUGIN_ROOT=..., ae) Vr.CLAUDE_PLUGIN_DATA=..."):
// CLAUDE_PLUGIN_ROOT is the twin extension's folder, the plugin's
// bytes as consent saw them; CLAUDE_PLUGIN_DATA, when Claude Code gave
// gemkit's hook one, is tmp (the run's HOME too): a sandboxed hook
// writes nothing that outlasts its run.
func (h *Hook) claudeEnv(out map[string]string, tmp string) {
	env := envmap.Of(h.Environ)
	for _, k := range claudeKept {
		if v, ok := env[k]; ok {
			out[k] = v
		}
	}
	if out["CLAUDE_PROJECT_DIR"] == "" {
		out["CLAUDE_PROJECT_DIR"] = h.Workspace
	}
	out["CLAUDE_PLUGIN_ROOT"] = h.Dir
	if env["CLAUDE_PLUGIN_DATA"] != "" {
		out["CLAUDE_PLUGIN_DATA"] = tmp
	}
}
