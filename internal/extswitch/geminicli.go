package extswitch

import (
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
)

// GeminiCLI is Gemini CLI as the switch's host, for the store st: its
// user settings file of st's home (internal/geminisettings), and its
// extension enablement in st's extensions folder for a hold
// (extension.Store.HoldInGeminiFor).
func GeminiCLI(st *extension.Store) Host { return geminiCLI{st} }

type geminiCLI struct{ st *extension.Store }

func (g geminiCLI) SettingsPath() string { return geminisettings.Path(g.st.Home()) }

func (g geminiCLI) Read() (Settings, error) {
	gs, err := geminisettings.Read(g.SettingsPath())
	return Settings{Excluded: gs.Excluded, Servers: gs.Servers, Gemkit: gs.Gemkit, GemkitEnv: gs.GemkitEnv,
		Disabled: gs.Disabled, Hooks: hooksOf(gs.Hooks), ToolSandboxing: gs.ToolSandboxing}, err
}

func hooksOf(hooks []geminisettings.Hook) []HostHook {
	var out []HostHook
	for _, h := range hooks {
		out = append(out, HostHook{HookDef: HookDef(h.Def()), Key: h.Key()})
	}
	return out
}

func (g geminiCLI) WorkspaceHooks() (string, []HostHook, bool) {
	path := geminisettings.Path(g.st.Workspace())
	if path == g.SettingsPath() {
		return "", nil, false
	}
	ws, err := geminisettings.Read(path)
	if err != nil {
		return "", nil, false
	}
	return path, hooksOf(ws.Hooks), true
}

func (g geminiCLI) Apply(e Edit) (Applied, error) {
	var add []geminisettings.HookDef
	for _, h := range e.AddHooks {
		add = append(add, geminisettings.HookDef(h))
	}
	res, err := geminisettings.Apply(g.SettingsPath(), geminisettings.Edit{Exclude: e.Exclude, Include: e.Include,
		Disable: e.Disable, Enable: e.Enable, AddHooks: add, RemoveHooks: e.RemoveHooks, Drop: e.Drop})
	return Applied(res), err
}

// HookKey is h's name, else its command, as Gemini CLI names a hook in
// hooksConfig.disabled (HookRegistry.getHookName), where it can be
// told for sure (extension.CommandHook.DisableKey).
func (g geminiCLI) HookKey(ext *extension.Extension, h extension.CommandHook) (string, string) {
	return h.DisableKey(ext.Dir, ext.Manifest.Settings)
}

func (g geminiCLI) Hold(entry string, names []string, why, fix string) (bool, error) {
	return g.st.HoldInGeminiFor(entry, names, why, fix)
}

func (g geminiCLI) Release(entry string) (*extension.Hold, error) { return g.st.ReleaseInGemini(entry) }

func (g geminiCLI) Enabled(entry string) bool { return g.st.IsEnabled(entry) }
