package extmcp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/agentplugin"
	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// Profile is what one server may reach in its sandbox: the default
// profile, whether or not its extension declares permissions (those are
// its tools'), widened by what the person allowed (Spec.Widening). It
// reads the workspace, its extension's folder and its runtime's
// installation; it writes nothing but its extension's data folder,
// which is also its HOME, and, when allowed, the workspace; every
// extension's folder (its own, the others', wherever they lie) stays
// read-only to it; it reaches no network but the hosts allowed, through
// the sandbox's proxy as a tool's allowedHosts, and what else it tries
// is refused and reported (sandbox.Policy.ReportRefusals); its
// environment is the manifest's. It is built as a language server's
// is (sandbox.NewServerProfile).
type Profile struct {
	*sandbox.ServerProfile
	// Data is the extension's private, persistent data folder.
	Data string
	// Handed are the person's credential files the server is handed
	// (Spec.Widening's Credentials), at their places in its HOME.
	Handed []sandbox.Handed
	// NotHanded says, for each kind of credentials allowed of which no
	// file is agreed to, why, and how the person hands one: the server
	// starts without them.
	NotHanded map[string]string
	// Unset are the variables allowed by name that the environment of
	// the gemkit mcp starting the server does not have.
	Unset []string
	// Args are the server's arguments, and Dir its working folder (""
	// for the workspace): an Agent Plugins server's expanded, and its
	// cwd or plugin root (Spec.Plugin).
	Args []string
	Dir  string
}

// BuildProfile is the profile of sp for the workspace ws, from the
// person's environment environ (which names PATH and HOME, and nothing
// of which reaches the server but PATH), with data folders under
// dataRoot; extFolders are every extension's folders, read-only to it
// (its own among them).
func BuildProfile(sp Spec, ws, dataRoot string, environ []string, extFolders []string) (Profile, error) {
	return buildProfile(sp, ws, dataRoot, environ, extFolders, "")
}

// buildProfile is BuildProfile of a server shown the folder shown in
// place of its extension's folder (gemkit's copy of it as agreed to;
// "" for none), its program read there.
func buildProfile(sp Spec, ws, dataRoot string, environ []string, extFolders []string, shown string) (Profile, error) {
	env := envmap.Of(environ)
	home := env["HOME"]
	data := filepath.Join(dataRoot, sp.Extension)
	sp2, err := sandbox.NewServerProfile(sandbox.ServerSetup{
		Workspace: ws, Env: env, Distrusted: permission.Untrusted(ws, home, nil),
		Program: sp.program(), AbsoluteIn: sp.Dir, Own: sp.Dir, Shown: shown,
		Private: data, What: "its data folder", Moved: "HOME",
		ExtensionFolders: append([]string{sp.Dir}, extFolders...),
	})
	if err != nil {
		return Profile{}, err
	}
	pr := Profile{ServerProfile: sp2, Data: data, Args: sp.Args}
	// After NewServerProfile, which made the data folder: a plugin's
	// cwd in it is resolved there.
	plugin, err := pr.launch(sp, shown)
	if err != nil {
		return Profile{}, err
	}
	pr.Hosts, pr.UnixSockets = sp.Widening.Hosts, sp.Widening.UnixSockets
	if sp.Widening.Write == permission.AccessWorkspace {
		pr.Write = permission.AccessWorkspace
		pr.Guarded = permission.ProtectedPaths(permission.GuardInputs{Write: pr.Write, Workspace: ws, Home: home,
			ExtensionFolders: pr.ReadOnly, Getenv: func(k string) string { return env[k] }})
	}
	// Every host the server tries, allowed or not, is known: the
	// proxy, the resolver and the watch of its connect calls report
	// what they refuse. A server's processes each read their own /proc
	// entry (Chromium's do), which only the first one could: in the
	// sandbox's own PID namespace /proc holds no other process.
	pr.ReportRefusals, pr.OwnProcesses = true, true
	// Its data folder is bounded (datawatch.go): what it stores there
	// grows only as fast as it writes.
	pr.NoPreallocate = true
	pr.Closed = openData(pr.Closed, pr.Data)

	if err := pr.hand(sp, home, env); err != nil {
		return Profile{}, err
	}

	out := map[string]string{}
	vars := map[string]string{"HOME": pr.Data}
	// The person's variables passed by name, from this environment (the
	// gemkit mcp's, as its client started it); the extension's settings
	// and the manifest's env come on top.
	for _, k := range sp.Widening.Env {
		v, ok := env[k]
		if !ok {
			pr.Unset = append(pr.Unset, k)
			continue
		}
		out[k] = v
		vars[k] = v
	}
	for k, v := range sp.Settings {
		out[k] = v
		vars[k] = v
	}
	if sp.Plugin == nil {
		for k, v := range sp.Env {
			out[k] = expand(v, vars)
		}
	}
	delete(out, "PATH") // the searched part of the person's (NewServerProfile)
	out["HOME"] = pr.Data
	// Agent Plugins 1.0.0 §9.1: a plugin's env as written (expanded,
	// never read for $NAME) over the base environment, PATH and HOME
	// included, then PLUGIN_ROOT and PLUGIN_DATA over all.
	for k, v := range plugin.Env {
		out[k] = v
	}
	if _, set := plugin.Env["PATH"]; set {
		pr.Env = slices.DeleteFunc(pr.Env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	}
	if _, set := out["NODE_USE_ENV_PROXY"]; !set {
		// Every connection goes to the sandbox's proxy, which the
		// sandbox names in HTTP_PROXY: it lets through the allowed hosts
		// and refuses and reports the others. Node's fetch follows it
		// only when told so (Node 22.21 and 24 on); Node 20's never
		// does, and the host it looks up, or the address it connects
		// to, is refused and reported by the sandbox (its resolver, the
		// watch of its connect calls).
		out["NODE_USE_ENV_PROXY"] = "1"
	}
	for k, v := range out {
		pr.Env = append(pr.Env, k+"="+v)
	}
	pr.Finish()
	if sp.Tree != "" {
		// A pinned package's tree, read-only: it lies in
		// ~/.local/share/gemkit, closed to every other sandboxed process
		// (so after Finish, which leaves out what lies in the home).
		pr.Runtime = append(pr.Runtime, sp.Tree)
		slices.Sort(pr.Runtime)
		pr.Runtime = slices.Compact(pr.Runtime)
	}
	return pr, nil
}

// program is the server's program: an Agent Plugins server's
// plugin-relative command is its file in the plugin's folder, and a
// bare one is found on gemkit's PATH, whatever its env says (Agent
// Plugins 1.0.0 §7.2.1 leaves that to the client).
func (sp Spec) program() string {
	if sp.Plugin != nil {
		return sp.Plugin.Program(sp.Dir)
	}
	return sp.Command
}

// launch is, for an Agent Plugins server (Spec.Plugin), how it is
// started (agentplugin.Launch): its arguments and working folder set in
// pr; nothing for another server.
func (pr *Profile) launch(sp Spec, shown string) (agentplugin.Launch, error) {
	if sp.Plugin == nil {
		return agentplugin.Launch{}, nil
	}
	l, err := sp.Plugin.Launch(sp.Dir, pr.Data, shown)
	if err != nil {
		return l, err
	}
	pr.Args, pr.Dir = l.Args, l.Dir
	return l, nil
}

// Policy is the sandbox policy of the profile, run in ws with the
// private temp folder tmp.
func (p Profile) Policy(ws, tmp string) sandbox.Policy {
	pol := p.ServerProfile.Policy(ws, tmp)
	pol.Handed = p.Handed
	return pol
}

// openData is closed with data opened: a closed folder that holds data
// (~/.local/share/gemkit) gives way to what it holds besides the way to
// data, so the other extensions' data folders stay closed.
func openData(closed []string, data string) []string {
	var out []string
	for _, c := range closed {
		if !fsutil.Within(c, data) {
			out = append(out, c)
			continue
		}
		for d := data; d != c && fsutil.Within(c, d); d = filepath.Dir(d) {
			entries, err := os.ReadDir(filepath.Dir(d))
			if err != nil {
				continue
			}
			for _, e := range entries {
				if e.Name() != filepath.Base(d) {
					out = append(out, filepath.Join(filepath.Dir(d), e.Name()))
				}
			}
		}
	}
	return out
}

// hand hands the server the credentials files of sp's kinds that the
// person agreed to (Spec.Handed), each only while it is still that file
// (permission.CheckHanded) and no variable of the person's environment
// env (gemkit mcp's, with what its client added: Gemini CLI's own, and
// a workspace's .env it loaded) names another; either refuses the start
// in words. A kind with no file agreed to is handed nothing (NotHanded).
// Each file's folder is made in the data folder, where the sandbox shows
// the file read-only (sandbox.Handed). The data folder is the server's:
// a link in it where a folder is to be is refused in words, never
// followed.
func (pr *Profile) hand(sp Spec, home string, env map[string]string) error {
	agree := "gemkit extensions sandbox " + Printable(sp.Extension)
	for _, k := range sp.Widening.Credentials {
		var files []permission.HandedFile
		for _, f := range sp.Handed {
			if f.Kind == k {
				files = append(files, f)
			}
		}
		if len(files) == 0 {
			if pr.NotHanded == nil {
				pr.NotHanded = map[string]string{}
			}
			why, fix := permission.NotHanded(k, home, agree)
			pr.NotHanded[k] = why + ": " + fix
			continue
		}
		for _, f := range files {
			if err := permission.CheckHanded(f); err != nil {
				return fmt.Errorf("%w: `%s`", err, agree)
			}
		}
		if err := permission.CheckCredentialVariables(k, home, files, func(name string) string { return env[name] }); err != nil {
			return err
		}
		for _, f := range files {
			pr.Handed = append(pr.Handed, sandbox.Handed{Source: f.Source, Target: filepath.Join(pr.Data, f.Target)})
		}
	}
	if len(pr.Handed) == 0 {
		return nil
	}
	root, err := fsutil.OpenRoot(pr.Data)
	if err != nil {
		return fmt.Errorf("its data folder: %w", err)
	}
	defer root.Close()
	for _, h := range pr.Handed {
		rel, _ := fsutil.Rel(pr.Data, filepath.Dir(h.Target))
		parts := strings.Split(filepath.ToSlash(rel), "/")
		for i := range parts {
			name := strings.Join(parts[:i+1], "/")
			fi, err := root.Lstat(name)
			if err == nil && fi.IsDir() {
				continue
			}
			if err == nil || !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("its data folder holds %s where gemkit shows your credentials, and it is not a folder (a link?); remove it and ask again", root.Path(name))
			}
			if err := root.MkdirAll(name, 0o700); err != nil {
				return fmt.Errorf("its data folder: %w", err)
			}
		}
	}
	return nil
}

// warnProfile tells the person what of the widening the server does not
// get: credentials allowed of which no file was found, variables passed
// by name that gemkit mcp's own environment lacks. It starts all the
// same, as it would without them.
func (s *server) warnProfile(pr Profile) {
	s.reports.begin(pr.NotHanded, pr.ReadOnly)
	for _, k := range sortedKeys(pr.NotHanded) {
		s.m.log.Warn(s.who() + " is handed your " + k + " credentials, but " + pr.NotHanded[k] + "; it starts without them")
	}
	// Gemini CLI's rule explains only the names it redacts; any other is
	// simply not set where gemkit mcp was started (a typo, a shell that
	// never exported it).
	var redacted, unset []string
	for _, n := range pr.Unset {
		if geminisettings.Redacted(n) {
			redacted = append(redacted, n)
		} else {
			unset = append(unset, n)
		}
	}
	if len(redacted) > 0 {
		s.m.log.Warn(s.who() + " is passed " + strings.Join(redacted, ", ") + " by name, which this gemkit mcp's environment does not have (a client may have started it without them: Gemini CLI 0.61 leaves out every variable whose name holds TOKEN, KEY, SECRET, AUTH, PASSWORD, CREDENTIAL or the like unless gemkit's entry in its settings names it in its env; docs/mcp.md); it starts without them")
	}
	if len(unset) > 0 {
		s.m.log.Warn(s.who() + " is passed " + strings.Join(unset, ", ") + " by name, which this gemkit mcp's environment does not have: set it in the environment gemkit mcp's client starts from, or name it in the env of gemkit's entry in the client's settings (Gemini CLI 0.61 also leaves out a variable whose value looks like a key or a token; docs/mcp.md); it starts without them")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
