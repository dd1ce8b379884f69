package extswitch

import "github.com/gemkit/gemkit/internal/extension"

// Host is the agent the switch takes an extension's servers and hooks
// from: what of its settings the switch reads and writes, and how it
// holds an extension whole. Gemini CLI is the one host today
// (GeminiCLI): its settings file's mcp.excluded, hooksConfig.disabled and
// hooks, and its extension enablement for a hold. Claude Code fits the
// same seam (its deniedMcpServers for Excluded, its enabledPlugins for a
// hold), with the switch's records and steps unchanged.
type Host interface {
	// SettingsPath is the settings file the switch writes.
	SettingsPath() string
	// Read reads what the switch needs of that file.
	Read() (Settings, error)
	// WorkspaceHooks are the command hooks of the workspace's settings,
	// and the file they are in; ok is false when there is none apart
	// from SettingsPath or it cannot be read.
	WorkspaceHooks() (path string, hooks []HostHook, ok bool)
	// Apply makes edit to the settings file at once.
	Apply(edit Edit) (Applied, error)
	// HookKey is the string of Settings.Disabled that turns h, a hook of
	// ext, off in the host; "" with why when none does for sure.
	HookKey(ext *extension.Extension, h extension.CommandHook) (key, why string)
	// Hold keeps the host from running the extension whose folder is
	// entry, under every name of names, for why (fix: what ends it when
	// agreeing again does not); held is false when it was held already.
	Hold(entry string, names []string, why, fix string) (held bool, err error)
	// Release ends the hold of entry, returning it (nil when none).
	Release(entry string) (*extension.Hold, error)
	// Enabled reports whether the person's own choice runs entry in the
	// host.
	Enabled(entry string) bool
}

// Settings is what the switch reads of the host's settings.
type Settings struct {
	// Excluded are the server names the host starts and connects to
	// none of (Gemini CLI's mcp.excluded).
	Excluded []string
	// Servers are the names of the person's own servers.
	Servers []string
	// Gemkit is the name of the entry that starts gemkit mcp, "" when
	// none does; GemkitEnv the variables that entry passes it.
	Gemkit    string
	GemkitEnv []string
	// Disabled are the strings that turn hooks off (Gemini CLI's
	// hooksConfig.disabled), and Hooks the command hooks of the file,
	// gemkit's own among them.
	Disabled []string
	Hooks    []HostHook
	// ToolSandboxing: the host runs its shell tool's commands in its own
	// sandbox.
	ToolSandboxing bool
}

// HookDef is one hook definition of gemkit's in the host's settings:
// one command hook on an event, under a matcher.
type HookDef struct {
	Event, Matcher string
	Sequential     bool
	Name, Command  string
	// Timeout in milliseconds; 0 leaves the host's default.
	Timeout int
}

// HostHook is one command hook of the host's settings, and the string
// of Settings.Disabled that turns it off.
type HostHook struct {
	HookDef
	Key string
}

// Edit is one change the switch makes to the host's settings, written
// at once.
type Edit struct {
	// Exclude and Include are server names to add to and remove from
	// Settings.Excluded; Disable and Enable strings to add to and remove
	// from Settings.Disabled.
	Exclude, Include []string
	Disable, Enable  []string
	// AddHooks are definitions to add; RemoveHooks the commands whose
	// definitions to remove.
	AddHooks    []HookDef
	RemoveHooks []string
	// Drop are keys the switch made (Applied.Created) to remove when
	// left empty.
	Drop []string
}

// Applied is what an Edit changed: the strings it added to and removed
// from each list, and the keys it made and dropped.
type Applied struct {
	Excluded, Included, Disabled, Enabled []string
	Created, Dropped                      []string
}
