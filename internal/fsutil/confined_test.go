package fsutil

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The packages that touch trees an extension or a tool controls (an
// extension's folder, a clone or a staging folder, the workspace) must do
// so through a Root. This test parses their sources and fails on any
// call of the plain file-system functions below that is not in
// trustedCalls, each entry of which says which trusted place the call
// touches and why a plain call is right there.

// confinedDirs are the packages checked (from the repository's root);
// for internal/cli, only the files of the commands that read an
// extension's tree or run the agent; internal/extswitch and
// internal/extview are the switch and the reading those commands drive.
var confinedDirs = []string{
	"internal/extension", "internal/toolrun", "internal/disclosure",
	"internal/agent", "internal/acp", "internal/mcpserver", "internal/cli",
	"internal/extswitch", "internal/extview", "internal/claudeswitch",
}

func confinedFile(dir, name string) bool {
	if strings.HasSuffix(name, "_test.go") || !strings.HasSuffix(name, ".go") {
		return false
	}
	if dir != "internal/cli" {
		return true
	}
	for _, p := range []string{"extensions", "mcp", "run", "chat", "acp", "agent_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// plainCalls are the functions, by import path, that touch a path
// without a Root.
var plainCalls = map[string][]string{
	"os": {"Open", "OpenFile", "ReadFile", "ReadDir", "Stat", "Lstat", "Readlink", "Rename", "Remove", "RemoveAll",
		"WriteFile", "Create", "CreateTemp", "Mkdir", "MkdirAll", "MkdirTemp", "Symlink", "Link", "Chmod", "Chown",
		"Lchown", "Chtimes", "Truncate", "DirFS", "CopyFS", "OpenRoot", "OpenInRoot"},
	"io/ioutil":             {"ReadFile", "ReadDir", "WriteFile", "TempDir", "TempFile"},
	"path/filepath":         {"Walk", "WalkDir", "EvalSymlinks", "Glob"},
	"syscall":               {"Open", "Openat", "Rename", "Renameat", "Unlink", "Rmdir", "Mkfifo", "Link", "Symlink", "Stat", "Lstat"},
	"golang.org/x/sys/unix": {"Open", "Openat", "Openat2", "Rename", "Renameat", "Renameat2", "Unlink", "Unlinkat", "Stat", "Lstat", "Fstatat"},
	"github.com/gemkit/gemkit/internal/fsutil": {"WriteFileAtomic", "ReplaceFile", "RemoveTree", "OpenRegular", "StatIn", "Workspace"},
}

// trustedCalls are the plain calls allowed, by "dir/file.go func
// pkg.Func" (func is the enclosing function, Type.Method for a method),
// each with the trusted place it touches and why.
var trustedCalls = map[string]string{
	"internal/claudeswitch/doctor.go Switch.Doctor os.Stat":                         "whether a twin plugin's folder is still in TM, in ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own",
	"internal/claudeswitch/lock_unix.go Switch.lock os.MkdirAll":                    "~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own, for its lock",
	"internal/claudeswitch/lock_unix.go Switch.lock os.OpenFile":                    "the switch's lock file in ~/.local/share/gemkit/claude-plugins, gemkit's own",
	"internal/claudeswitch/files.go copyTree os.Mkdir":                              "the new folder a twin is copied into, in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process; the plugin's tree is read through a Root",
	"internal/claudeswitch/files.go Places.stage os.MkdirAll":                       "the staging folder of the twins, in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/files.go Places.place os.MkdirAll":                       "the folder of a twin (TH's extensions, TM's plugins), in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/files.go Places.place os.Rename":                         "a twin made in the staging folder moved into place, both in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/files.go Places.place fsutil.RemoveTree":                 "the twin a new one replaced, in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/files.go Places.WriteExtension fsutil.RemoveTree":        "what is left of a twin extension being made, in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/files.go Places.WritePlugin fsutil.RemoveTree":           "what is left of a twin plugin being made, in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/files.go Places.Remove fsutil.RemoveTree":                "a twin plugin in TM, a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/files.go Places.writeMarketplace os.ReadDir":             "the names of TM's twin plugins, folders gemkit made in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/files.go Places.writeMarketplace os.MkdirAll":            "TM's .claude-plugin folder, in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/files.go Places.writeMarketplace fsutil.WriteFileAtomic": "TM's marketplace.json, which gemkit writes whole, in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/settings.go readSettings os.ReadFile":                    "Claude Code's user settings file, the person's own (a plugin's files are read through Roots)",
	"internal/claudeswitch/settings.go writeSettings os.Lstat":                      "whether Claude Code's user settings file is there, to keep its mode",
	"internal/claudeswitch/settings.go writeSettings fsutil.ReplaceFile":            "Claude Code's user settings file, replaced atomically, its mode kept",
	"internal/claudeswitch/settings.go writeSettings fsutil.WriteFileAtomic":        "Claude Code's user settings file, made 0600 when there was none",
	"internal/claudeswitch/switch.go Switch.writeRecords os.MkdirAll":               "a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/switch.go Switch.writeRecords fsutil.WriteFileAtomic":    "the switch's records, switched.json in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/claudeswitch/switch.go Switch.Enable os.MkdirAll":                     "Claude Code's home folder, the person's own, for a settings file gemkit makes",
	"internal/claudeswitch/switch.go Switch.Disable os.ReadFile":                    "Claude Code's user settings file, the person's own, compared with what gemkit wrote",
	"internal/claudeswitch/switch.go Switch.Disable os.Remove":                      "Claude Code's user settings file gemkit made, unchanged since, removed by the switch off",
	"internal/claudeswitch/switch.go readRecords os.ReadFile":                       "the switch's records, switched.json in a folder of ~/.local/share/gemkit/claude-plugins (gemkitdir.ClaudePlugins), gemkit's own and closed to every sandboxed process",
	"internal/extswitch/orphans.go isDir os.Lstat":                                  "the folder of an extension's pinned packages in ~/.local/share/gemkit/packages (pkgrun.Root): whether it is there, nothing in it read or followed",
	"internal/extswitch/orphans.go treeBytes filepath.WalkDir":                      "the size of an extension's pinned packages, for doctor's words: WalkDir follows no link, and only the entries' own sizes (lstat) are read, never their contents",
	"internal/extswitch/orphans.go Switch.orphanNames os.ReadDir":                   "the names in ~/.local/share/gemkit/packages (pkgrun.Root), folders gemkit made, one per extension",
	"internal/extswitch/packages.go Switch.previous os.Lstat":                       "a pin's tree at the path gemkit recorded for it in ~/.local/share/gemkit/packages: whether something is there; what is there is checked through a Root (PinnedTreeChanged)",
	"internal/extswitch/served.go Switch.ListSwitched os.MkdirTemp":                 "the empty workspace gemkit makes for the switch's listing of the servers it switched, removed with fsutil.RemoveTree",
	"internal/extswitch/served.go Switch.ListSwitched fsutil.RemoveTree":            "that workspace, which the servers may have written in; links inside are removed, never followed",
	"internal/extswitch/pins.go pinnedTreeExists os.Lstat":                          "a pin's tree at the path gemkit recorded for it: whether something is there, nothing followed",
	"internal/acp/acp.go server.open os.Stat":                                       "the cwd the ACP client names for the session: the workspace folder itself, the person's choice",
	"internal/acp/session.go newSession filepath.EvalSymlinks":                      "the workspace folder's own path (the person's), to name files as the client does",
	"internal/acp/session.go session.readLinked fsutil.OpenRegular":                 "a file outside the workspace that the person linked in their prompt, opened as named (regular files only, never blocking); one inside goes through the workspace's Root",
	"internal/agent/workspace.go Agent.openFile fsutil.Workspace":                   "the workspace folder's own path, the person's choice; names below it go through its Root",
	"internal/cli/agent_workspace.go app.resolveWorkspace fsutil.Workspace":         "--workspace or the run's folder, the folder the person names",
	"internal/cli/extensions_common.go openStore fsutil.Workspace":                  "--workspace, the folder the person names",
	"internal/cli/extensions_common.go resolveHome os.Stat":                         "--home and the folders it must hold, named by the person",
	"internal/extswitch/switchfindings.go goneHookPrograms os.Stat":                 "the program of a hook of gemkit's in the person's Gemini CLI settings (gemkit's own binary, as the switch wrote it), only checked to exist",
	"internal/cli/extensions_switch.go gemkitBinary filepath.EvalSymlinks":          "gemkit's own executable, which its hooks start",
	"internal/cli/extensions_install.go keptData os.ReadDir":                        "the data folder gemkit made for the extension's MCP servers in ~/.local/share/gemkit/extension-data (extmcp.DataRoot), which no server can replace; only its names are counted, nothing in it is read or followed",
	"internal/extswitch/pins.go treeThere os.Lstat":                                 "a tree gemkit installed for a pinned package in ~/.local/share/gemkit/packages (pkgrun.Root), made 0700 and closed to every sandboxed process; only whether the folder is there is asked, nothing in it is read or followed",
	"internal/disclosure/source.go storeSource.Stamp os.ReadDir":                    "the extensions folder: the store's own listing",
	"internal/disclosure/source.go stamp os.Stat":                                   "the extensions folder and its entries (made by gemkit, Gemini CLI or the person); files inside an entry are stamped through its Root",
	"internal/extension/conflicts.go Store.ConflictsWith os.ReadDir":                "the extensions folder: the store's own listing",
	"internal/extension/folders.go foldersIn os.ReadDir":                            "the extensions folder or gemkit's Agent Plugins folder (~/.gemini/gemkit/plugins): the store's own listing",
	"internal/extension/hold.go Store.HoldInGeminiFor os.Lstat":                     "Gemini CLI's enablement file in the extensions folder (the store's own), whether it exists before a hold",
	"internal/extension/hold.go Store.releaseLocked os.Remove":                      "gemkit's holds record in its state folder (~/.gemini/gemkit, 0700) and Gemini CLI's enablement file the hold made, in the extensions folder: names gemkit trusts, removed, never followed (a link there is removed itself)",
	"internal/extension/plugin.go Store.entriesIn os.ReadDir":                       "the extensions folder or gemkit's Agent Plugins folder: the store's own listing",
	"internal/extension/plugin.go Store.entriesIn filepath.EvalSymlinks":            "the extensions folder's or the plugins folder's own path",
	"internal/extension/plugin.go Store.entriesIn os.Stat":                          "an entry of the extensions or plugins folder (a symlink the person made to a folder counts): entries are made by gemkit, Gemini CLI or the person",
	"internal/extension/store.go Store.Get os.Stat":                                 "an entry of the extensions folder, as in List",
	"internal/extension/store.go Store.loadEntry filepath.EvalSymlinks":             "the extensions folder's own path",
	"internal/extension/load.go resolveDir os.Lstat":                                "the extension's folder itself (an entry of the store, or the source a link's metadata names); what is inside goes through its Root",
	"internal/extension/load.go resolveDir filepath.EvalSymlinks":                   "the extension's folder itself, as above: its real path is ${extensionPath}",
	"internal/extension/load.go dirCheck os.Stat":                                   "the extension's folder itself, as above",
	"internal/extension/consent.go readRecords os.ReadFile":                         "gemkit's own records (consent, the extensions' MCP server choices) in ~/.gemini/gemkit, a folder it makes 0700",
	"internal/extension/consent.go writeRecords fsutil.WriteFileAtomic":             "gemkit's own records (consent, the extensions' MCP server choices) in ~/.gemini/gemkit, a folder it makes 0700",
	"internal/extension/servers.go Store.ServerChoicesStamp os.Stat":                "gemkit's own record of the MCP server choices, as above",
	"internal/extension/enablement.go Store.readEnablement os.ReadFile":             "the store's enablement file, shared with Gemini CLI, in the extensions folder",
	"internal/extension/enablement.go Store.writeEnablement os.MkdirAll":            "the extensions folder itself",
	"internal/extension/enablement.go Store.writeEnablement fsutil.WriteFileAtomic": "the store's enablement file, as above",
	"internal/extension/consentfiles.go Store.writeConsentFiles os.MkdirAll":        "gemkit's own consent-files folder in ~/.gemini/gemkit, made 0700",
	"internal/extension/consentfiles.go removeConsentFiles os.Remove":               "a per-file list of gemkit's own consent records in ~/.gemini/gemkit/consent-files, named by a hash",
	"internal/extension/digestcache.go readDigestCache os.Open":                     "gemkit's own digest cache of an extension folder in ~/.gemini/gemkit/digests, a folder it makes 0700 and no sandboxed process can write; a damaged one is ignored",
	"internal/extension/digestcache.go openDigestCache os.Stat":                     "gemkit's own digest cache of an extension folder in ~/.gemini/gemkit/digests: whether it is there and its size, before it is read",
	"internal/extension/copiedlinks.go CopiedLinks filepath.EvalSymlinks":           "the folder an install copied, as its metadata names it (the source the person installed from), resolved only to compare the extension's link targets with: nothing there is read or written",
	"internal/extension/digestcache.go digestCache.save os.MkdirAll":                "gemkit's own state folder ~/.gemini/gemkit and its digests folder, made 0700",
	"internal/extension/digestcache.go digestCache.save fsutil.WriteFileAtomic":     "gemkit's own digest cache in ~/.gemini/gemkit/digests, written 0600",
	"internal/extension/uninstall.go Store.Uninstall os.Remove":                     "gemkit's own digest cache of the folder being uninstalled, in ~/.gemini/gemkit/digests",
	"internal/extension/digestcache.go Store.digestCacheOf filepath.EvalSymlinks":   "the extension's folder itself (an entry of the store, as resolveDir resolves it), only to name its digest cache; what is inside goes through its Root",
	"internal/extension/fileutil.go Store.lock os.MkdirAll":                         "gemkit's own state folder ~/.gemini/gemkit, made 0700",
	"internal/extension/fileutil.go Store.lock os.OpenFile":                         "gemkit's own lock file in that folder",
	"internal/extension/staging.go Store.newStaging os.MkdirAll":                    "the extensions folder and gemkit's staging folder (0700)",
	"internal/extension/staging.go Store.newStaging os.MkdirTemp":                   "a new staging folder gemkit makes for one operation",
	"internal/extension/staging.go sweepStagingIn os.ReadDir":                       "gemkit's staging folder, or the extensions folder for its own .gemkit- folders",
	"internal/extension/staging.go sweepStagingIn fsutil.RemoveTree":                "a staging folder of a finished gemkit; links inside are removed, never followed",
	"internal/extension/staging.go Store.checkFreeIn os.Lstat":                      "an entry name in the extensions or plugins folder, not followed",
	"internal/extension/staging.go Store.commit os.MkdirAll":                        "the extensions or plugins folder itself, made where it is missing (gemkit's own place)",
	"internal/extension/staging.go Store.commit os.Lstat":                           "an entry name in the extensions folder, not followed",
	"internal/extension/staging.go Store.commit os.Rename":                          "the staging folder gemkit filled, renamed to an entry of the extensions folder",
	"internal/extension/staging.go Store.swap os.Rename":                            "an entry of the extensions folder and gemkit's staging folder, swapped",
	"internal/extension/staging_unix.go sameFileSystem os.Stat":                     "gemkit's staging folder and the extensions folder",
	"internal/extension/exchange_linux.go exchange unix.Renameat2":                  "an entry of the extensions folder and the staged folder that replaces it",
	"internal/extension/agreedcopy.go Store.KeepAgreedCopy os.Lstat":                "a copy's folder in gemkit's ~/.local/share/gemkit/agreed/<extension>/<digest> (names gemkit checked), not followed",
	"internal/extension/agreedcopy.go Store.KeepAgreedCopy os.MkdirAll":             "gemkit's folder of an extension's copies, made 0700",
	"internal/extension/agreedcopy.go Store.KeepAgreedCopy os.MkdirTemp":            "a new folder gemkit makes there for one copy",
	"internal/extension/agreedcopy.go Store.KeepAgreedCopy os.Rename":               "the copy gemkit filled (through Roots) and read, renamed into place beside it",
	"internal/extension/agreedcopy.go Store.KeepAgreedCopy fsutil.RemoveTree":       "the folder gemkit made for one copy; links inside are removed, never followed",
	"internal/extension/agreedcopy.go Store.pruneAgreedCopies os.ReadDir":           "gemkit's folder of an extension's copies: only its entries' names and stats",
	"internal/extension/agreedcopy.go Store.pruneAgreedCopies fsutil.RemoveTree":    "a copy gemkit made, or one a process of gemkit's left half made; links inside are removed, never followed",
	"internal/extension/agreedcopy.go Store.ForgetAgreedCopies fsutil.RemoveTree":   "gemkit's folder of an extension's copies; links inside are removed, never followed",
	"internal/extension/copy.go copyTreeAs os.Mkdir":                                "the folder a copy starts, in gemkit's staging folder; the copy itself goes through Roots",
	"internal/extension/git.go gitClone fsutil.RemoveTree":                          "the clone gemkit made in its staging folder; links inside are removed, never followed",
	"internal/extension/git.go Store.fetch os.Stat":                                 "the local source folder the person names for install or update; what is below it is copied through a Root",
	"internal/extension/git.go Store.fetch filepath.EvalSymlinks":                   "the local source folder the person names, as above",
	"internal/extension/install.go Store.Install fsutil.RemoveTree":                 "gemkit's staging folder, or the entry this install just made; links inside are removed, never followed",
	"internal/extension/install.go Store.Link filepath.EvalSymlinks":                "the folder the person links",
	"internal/extension/install.go Store.Link os.Mkdir":                             "the entry gemkit makes in its staging folder",
	"internal/extension/install.go Store.Link fsutil.RemoveTree":                    "gemkit's staging folder, or the entry this link just made",
	"internal/extension/update.go Store.Update fsutil.RemoveTree":                   "gemkit's staging folder",
	"internal/extension/install.go Store.finalDir filepath.EvalSymlinks":            "the extensions folder's own path",
	"internal/extension/uninstall.go Store.removeEntry os.Lstat":                    "the entry uninstall removes, not followed",
	"internal/extension/uninstall.go Store.removeEntry os.Remove":                   "the entry (a link the person made) or gemkit's trash folder",
	"internal/extension/uninstall.go Store.removeEntry os.Rename":                   "the entry, moved into gemkit's staging folder before it is deleted",
	"internal/extension/uninstall.go Store.removeEntry fsutil.RemoveTree":           "that staging folder; links inside are removed, never followed",
	"internal/extension/templates.go CreateFromTemplate os.ReadDir":                 "the folder the person names for a new extension",
	"internal/extension/templates.go CreateFromTemplate os.MkdirAll":                "the folder the person names, and the temporary folder gemkit makes beside it",
	"internal/extension/templates.go CreateFromTemplate os.MkdirTemp":               "the temporary folder gemkit makes beside the new extension's",
	"internal/extension/templates.go CreateFromTemplate os.RemoveAll":               "that temporary folder, holding only gemkit's templates",
	"internal/extension/templates.go CreateFromTemplate os.Chmod":                   "that temporary folder",
	"internal/extension/templates.go CreateFromTemplate os.WriteFile":               "a template file gemkit writes into that temporary folder",
	"internal/extension/templates.go CreateFromTemplate syscall.Rename":             "that temporary folder renamed to the folder the person named",
	"internal/mcpserver/transport.go TokenFile os.MkdirAll":                         "the folder of gemkit mcp --http's token file (gemkit's state, or --token-file), made 0700",
	"internal/mcpserver/transport.go TokenFile os.CreateTemp":                       "the token file's folder, as above",
	"internal/mcpserver/transport.go TokenFile os.Remove":                           "the temporary token file gemkit made",
	"internal/mcpserver/transport.go TokenFile os.Link":                             "the token file, linked into place from gemkit's temporary file",
	"internal/mcpserver/transport.go readTokenFile fsutil.OpenRegular":              "the token file, checked to be a regular file others cannot read",
	"internal/toolrun/policy.go otherWrites.writes fsutil.StatIn":                   "the manifest of each installed extension's folder (ExtensionFolders), looked at without following a link out, on every call",
	"internal/toolrun/run.go Runner.Run os.MkdirTemp":                               "the tool's private temp dir, which gemkit makes",
	"internal/toolrun/consent.go SharedTemp filepath.EvalSymlinks":                  "the system's temporary folders",
	"internal/toolrun/runtime.go lookPath os.Stat":                                  "the folders of the person's PATH left after SearchPath dropped every folder a tool may write",
	"internal/toolrun/runtime.go isScript os.Open":                                  "the interpreter found there, as above",
	"internal/toolrun/runtime.go runtimes.resolve filepath.EvalSymlinks":            "the interpreter found there, as above",
	"internal/toolrun/runtime.go Runner.askShim os.MkdirTemp":                       "the private folders gemkit makes to ask a shim in",
	"internal/toolrun/runtime.go Runner.askShim os.Mkdir":                           "the private folders gemkit makes to ask a shim in",
	"internal/toolrun/tempdir.go removeTemp fsutil.RemoveTree":                      "the tool's private temp dir, which gemkit made: what the tool left inside is removed, never followed",
	"internal/toolrun/tempdir.go removeTemp fsutil.StatIn":                          "whether that temp dir is gone, not followed",
}

type plainCall struct{ key, pos string }

// findPlainCalls lists the plain calls in the Go files of dir (relative
// to root) that confinedFile selects.
func findPlainCalls(root, dir string) ([]plainCall, error) {
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return nil, err
	}
	var out []plainCall
	fset := token.NewFileSet()
	for _, e := range ents {
		if !confinedFile(dir, e.Name()) {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, dir, e.Name()), nil, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, plainCallsIn(fset, f, dir+"/"+e.Name())...)
	}
	return out, nil
}

func plainCallsIn(fset *token.FileSet, f *ast.File, file string) []plainCall {
	imports := map[string]string{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := filepath.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = p
	}
	var out []plainCall
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := fn.Name.Name
		if fn.Recv != nil && len(fn.Recv.List) > 0 {
			t := fn.Recv.List[0].Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			if id, ok := t.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok || id.Obj != nil {
				return true
			}
			path, ok := imports[id.Name]
			if !ok {
				return true
			}
			for _, c := range plainCalls[path] {
				if sel.Sel.Name == c {
					out = append(out, plainCall{
						key: fmt.Sprintf("%s %s %s.%s", file, name, filepath.Base(path), c),
						pos: fset.Position(sel.Pos()).String(),
					})
				}
			}
			return true
		})
	}
	return out
}

// TestUntrustedTreesConfined fails on a plain file-system call in the
// packages that touch untrusted trees unless trustedCalls lists it, and
// on an entry of trustedCalls that no call matches any more.
func TestUntrustedTreesConfined(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	var bad []string
	for _, dir := range confinedDirs {
		calls, err := findPlainCalls(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			if _, ok := trustedCalls[c.key]; ok {
				used[c.key] = true
				continue
			}
			bad = append(bad, fmt.Sprintf("%s: %s", c.pos, c.key))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("a plain file-system call where an extension or a tool controls the tree: %s; go through an fsutil.Root, or, for a place gemkit trusts, add it to trustedCalls saying why", b)
	}
	for k := range trustedCalls {
		if !used[k] {
			t.Errorf("trustedCalls lists %q, which no call matches any more: remove it", k)
		}
	}
}

// TestConfinedCheckCatchesPlainCalls: the check finds a plain call
// reintroduced in any form (a renamed import, a function value, a
// trusted-path helper of fsutil outside the list), and is not fooled by a
// local variable that shadows a package name.
func TestConfinedCheckCatchesPlainCalls(t *testing.T) {
	src := `package extension

import (
	xos "os"
	"path/filepath"

	"github.com/gemkit/gemkit/internal/fsutil"
)

func (e *Extension) settings() {
	xos.ReadFile(filepath.Join(e.Dir, ".env"))
	read := xos.Open
	_ = read
	filepath.WalkDir(e.Dir, nil)
	fsutil.WriteFileAtomic(e.Dir, nil, 0)
}

func shadowed() {
	filepath := struct{ Glob func() }{}
	filepath.Glob()
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range plainCallsIn(fset, f, "internal/extension/x.go") {
		if _, ok := trustedCalls[c.key]; ok {
			t.Errorf("%s is allowed", c.key)
		}
		got = append(got, c.key)
	}
	want := []string{
		"internal/extension/x.go Extension.settings os.ReadFile",
		"internal/extension/x.go Extension.settings os.Open",
		"internal/extension/x.go Extension.settings filepath.WalkDir",
		"internal/extension/x.go Extension.settings fsutil.WriteFileAtomic",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
