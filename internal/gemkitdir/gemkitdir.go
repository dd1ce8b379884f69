// Package gemkitdir names the folders gemkit keeps its own files in, each
// computed here once: the permission checks close them to every tool
// (internal/permission), and the packages that write in them (config,
// extension, extmcp, pkgrun, langserver, lspbroker, exthook, the sandbox's
// placeholder locks, `gemkit mcp`'s token) ask here where they are, so
// that what is closed is what is written. The agents' folders (~/.gemini,
// ~/.claude, ~/.qwen) are the agents table's, in ide. This package stands
// below internal/permission and imports nothing of gemkit's but ide and
// its runtimedir.
//
// The folders:
//   - configuration: gemkit/ in the user's config folder
//     ($XDG_CONFIG_HOME, else ~/.config; os.UserConfigDir elsewhere):
//     config.json, and placeholders/ under the account's ~/.config/gemkit;
//   - data: ~/.local/share/gemkit (extension-data/, packages/, the
//     extensions' servers' records, acp-sessions/), which does not follow
//     XDG_DATA_HOME, as the closed folders do not;
//   - records in Gemini CLI's folder: ~/.gemini/gemkit (the extensions'
//     consents, holds and servers, staging, `gemkit mcp`'s token);
//   - cache: gemkit/ in the user's cache folder (the language servers'
//     private caches);
//   - runtime: $XDG_RUNTIME_DIR/gemkit, else gemkit-<uid> in the
//     temporary folder (the code-intelligence brokers' and the warm
//     hooks' sockets), which MakeRuntime makes and checks.
package gemkitdir

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkitdir/runtimedir"
)

// Name is the folder's name under each base folder ("gemkit").
const Name = runtimedir.Name

// Config is gemkit's configuration folder in the config folder
// configHome ($XDG_CONFIG_HOME): configHome/gemkit.
func Config(configHome string) string { return filepath.Join(configHome, Name) }

// HomeConfig is ~/.config/gemkit under home, where a program that does
// not set XDG_CONFIG_HOME keeps gemkit's configuration.
func HomeConfig(home string) string { return Config(filepath.Join(home, ".config")) }

// UserConfig is gemkit's configuration folder of this process: gemkit in
// os.UserConfigDir ($XDG_CONFIG_HOME or ~/.config on Linux, ~/Library/
// Application Support on macOS, %AppData% on Windows).
func UserConfig() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return Config(d), nil
}

// Placeholders is the folder of the sandbox's placeholder locks of the
// account whose home folder is home: ~/.config/gemkit/placeholders,
// which neither HOME nor XDG_CONFIG_HOME moves.
func Placeholders(home string) string { return filepath.Join(HomeConfig(home), "placeholders") }

// Data is gemkit's data folder under home: ~/.local/share/gemkit. It
// does not follow XDG_DATA_HOME, which the closed folders do not follow
// either.
func Data(home string) string { return filepath.Join(home, ".local", "share", Name) }

// ExtensionData is the folder of the extensions' MCP servers' private
// data folders: ~/.local/share/gemkit/extension-data.
func ExtensionData(home string) string { return filepath.Join(Data(home), "extension-data") }

// Packages is the folder of the trees gemkit installs for the
// extensions' pinned servers: ~/.local/share/gemkit/packages.
func Packages(home string) string { return filepath.Join(Data(home), "packages") }

// ACPSessions is the folder of the conversations `gemkit acp` keeps for
// the editors to list, load and resume: ~/.local/share/gemkit/acp-sessions.
func ACPSessions(home string) string { return filepath.Join(Data(home), "acp-sessions") }

// InGemini is gemkit's records in Gemini CLI's folder gemini (~/.gemini
// or $GEMINI_CLI_HOME/.gemini): gemini/gemkit.
func InGemini(gemini string) string { return filepath.Join(gemini, Name) }

// InGeminiHome is gemkit's records under home, the folder that holds
// Gemini CLI's .gemini: home/.gemini/gemkit.
func InGeminiHome(home string) string {
	return InGemini(filepath.Join(home, ide.AgentGemini.HomeDir))
}

// Servers is where gemkit's servers record their secret files, in
// Gemini CLI's folder gemini: gemini/gemkit/servers.
func Servers(gemini string) string { return filepath.Join(InGemini(gemini), "servers") }

// TempServers is where gemkit's servers of user uid record their secret
// files when the account has no home folder of its own:
// /tmp/gemkit-<uid>/servers, in the runtime folder /tmp gives
// (TempRuntime).
func TempServers(uid int) string { return filepath.Join(TempRuntime("/tmp", uid), "servers") }

// TempPlaceholders is the folder of the sandbox's placeholder locks of
// user uid when the account's home folder cannot hold them (none, or
// one it may not write): /tmp/gemkit-placeholders-<uid>, the same for
// every gemkit process of the user.
func TempPlaceholders(uid int) string {
	return filepath.Join("/tmp", Name+"-placeholders-"+strconv.Itoa(uid))
}

// Cache is gemkit's cache folder: gemkit in os.UserCacheDir
// ($XDG_CACHE_HOME or ~/.cache on Linux).
func Cache() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, Name), nil
}

// Runtime is gemkit's folder in the runtime folder runtime
// ($XDG_RUNTIME_DIR): runtime/gemkit (runtimedir.Runtime).
func Runtime(runtime string) string { return runtimedir.Runtime(runtime) }

// TempRuntime stands for Runtime where there is no runtime folder: the
// user's own gemkit-<uid> in the temporary folder tmp
// (runtimedir.TempRuntime).
func TempRuntime(tmp string, uid int) string { return runtimedir.TempRuntime(tmp, uid) }

// RuntimeFor is the runtime folder of user uid's gemkit processes whose
// runtime folder is runtime ($XDG_RUNTIME_DIR, "" when unset or not
// absolute) and temporary folder tmp: Runtime, else TempRuntime, /tmp's
// when too long for a socket's path (runtimedir.For, which the warm
// hooks' client calls before gemkit initializes).
func RuntimeFor(runtime, tmp string, uid int) string { return runtimedir.For(runtime, tmp, uid) }

// RuntimeDirs are every folder a gemkit process of user uid may take as
// its runtime folder, whatever its environment: RuntimeFor of each
// runtime folder of runtimes and /run/user/<uid>, and of each temporary
// folder of tmps and /tmp. They hold the code-intelligence brokers'
// sockets, locks and logs and the hooks' warm servers' sockets, and
// /tmp/gemkit-<uid> the records of gemkit's servers: the permission
// checks close them all to every sandboxed process.
func RuntimeDirs(runtimes, tmps []string, uid int) []string {
	var out []string
	add := func(d string) {
		d = filepath.Clean(d)
		for _, o := range out {
			if o == d {
				return
			}
		}
		out = append(out, d)
	}
	for _, rt := range append(append([]string(nil), runtimes...), fmt.Sprintf("/run/user/%d", uid)) {
		if rt != "" && filepath.IsAbs(rt) {
			add(RuntimeFor(rt, "", uid))
		}
	}
	for _, t := range append(append([]string(nil), tmps...), "/tmp") {
		if t != "" && filepath.IsAbs(t) {
			add(RuntimeFor("", t, uid))
		}
	}
	return out
}

// Agreed is the folder of gemkit's own copies of the extensions' folders
// as the person agreed to them, which its sandbox shows their MCP
// servers in place of the folders: ~/.local/share/gemkit/agreed.
func Agreed(home string) string { return filepath.Join(Data(home), "agreed") }

// ClaudePlugins is the folder of the Claude Code plugins switched to
// gemkit's sandbox: ~/.local/share/gemkit/claude-plugins. It holds the
// switch's records and the two folders below.
func ClaudePlugins(home string) string { return filepath.Join(Data(home), "claude-plugins") }

// ClaudePluginHome is gemkit's plugin home (TH): a folder holding a
// .gemini, used by gemkit alone, never by Gemini CLI, whose extensions
// are the switched plugins' twins: ~/.local/share/gemkit/claude-plugins/home.
func ClaudePluginHome(home string) string { return filepath.Join(ClaudePlugins(home), "home") }

// ClaudePluginMarketplace is gemkit's directory marketplace for Claude
// Code (TM), which holds the twin plugins Claude Code loads in place of
// the switched ones: ~/.local/share/gemkit/claude-plugins/marketplace.
func ClaudePluginMarketplace(home string) string {
	return filepath.Join(ClaudePlugins(home), "marketplace")
}
