package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/pkgrun"
	"github.com/gemkit/gemkit/internal/runnerline"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// A switched extension's package-runner servers (npx -y pkg, npm exec,
// pnpm dlx, bunx, yarn dlx) are pinned when the person switches it or
// agrees to it, and pinned again by update: gemkit installs each one's
// package once, at an exact version, in its sandbox (internal/pkgrun),
// and the pins go into the consent with the rest. gemkit mcp runs the
// server from the pinned tree, never from the registry.

// geminiFetches says what Gemini CLI does with the same manifest: the
// person reads it beside what gemkit does.
const geminiFetches = "Gemini CLI, with the same manifest, runs the runner itself at each start: it fetches the package from the registry (for a bare name, the newest that runs on your node; for @latest, the latest) with your rights and runs whatever it got, which nobody agreed to."

// packagePlan is what resolving an extension's package-runner servers
// came to: the pins to record, the trees installed for them now, and
// what to tell the person.
type packagePlan struct {
	pins  map[string]extension.Pin
	fresh []string
	// lines say, per server, what is pinned, what changed, or why it
	// cannot be: a line "- server (its command): ..." and the lines
	// under it, indented.
	lines []string
	// changed: the pins differ from the ones recorded.
	changed bool
	// unpinnable are the servers whose line cannot be pinned, or that
	// fetch from PyPI: gemkit mcp never starts them (cannotPin).
	unpinnable []runnerServer
	unlock     func()
}

// release gives back the extension's lock of its trees, once the pins
// are recorded or not, and removes the trees the records no longer pin
// (or never pinned: those installed for a consent not given). A record
// that cannot be read removes nothing.
func (p *packagePlan) release(a *app, st *extension.Store, ext string) {
	if p == nil || p.unlock == nil {
		return
	}
	if c, err := st.ServerChoice(ext); err == nil {
		pkgrun.Prune(packagesRoot(st), ext, c.PinnedTrees())
	}
	p.unlock()
	p.unlock = nil
}

// packagesRoot is the folder of the trees pinned for the extensions
// of st: pkgrun.Root of the home folder that holds its .gemini, so that
// the pins and their trees go together.
func packagesRoot(st *extension.Store) string { return pkgrun.Root(st.Home()) }

// runnerServer is a stdio server whose command is a package runner.
type runnerServer struct {
	name string
	// line is its command line as the manifest writes it.
	line string
	inv  runnerline.Invocation
	err  error
}

// runnerServers are ext's stdio servers started by a package runner,
// its manifest's by name and then its agents' by label (agent/server,
// ws their ${workspacePath}), each read (runnerline.Parse) or with why it
// cannot be.
func runnerServers(ext *extension.Extension, ws string) []runnerServer {
	var out []runnerServer
	add := func(name string, def json.RawMessage) {
		var d struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		if !extension.SandboxedServer(def) || agentread.Unmarshal(def, &d, true) != nil {
			return
		}
		inv, ok, err := runnerline.Parse(d.Command, d.Args)
		if ok {
			line := strings.Join(append([]string{filepath.Base(d.Command)}, d.Args...), " ")
			out = append(out, runnerServer{name: name, line: line, inv: inv, err: err})
		}
	}
	for _, name := range extension.SandboxedServers(ext.Manifest) {
		add(name, ext.Manifest.MCPServers[name])
	}
	if agents, err := ext.AgentServers(ws); err == nil {
		for _, a := range agents {
			label := a.Agent + "/" + a.Server
			if _, clash := ext.Manifest.MCPServers[label]; !clash {
				add(label, a.Def)
			}
		}
	}
	return out
}

// resolvePackages pins the package of each of ext's package-runner
// servers: a server whose pin still matches what the manifest asks (and
// the person's choice of install scripts) keeps it, unless refresh
// (update: the registry is asked again); the others are installed now.
// It holds the extension's lock of its trees until the plan is
// released. A failed or interrupted install fails it all, and leaves
// the trees as they were.
func resolvePackages(ctx context.Context, a *app, st *extension.Store, ext *extension.Extension, old extension.ServerChoice, scripts, refresh bool) (*packagePlan, error) {
	servers := runnerServers(ext, st.Workspace())
	plan := &packagePlan{pins: map[string]extension.Pin{}}
	if len(servers) == 0 && len(old.Packages) == 0 {
		return plan, nil
	}
	name := ext.Manifest.Name
	root := packagesRoot(st)
	// Held until the plan is released, which removes the trees the
	// records no longer pin: with no package-runner server left, those
	// of the old pins, once the choice without them is recorded.
	unlock, err := pkgrun.Lock(root, name)
	if err != nil {
		return nil, err
	}
	plan.unlock = unlock
	if len(servers) == 0 {
		plan.changed = true
		return plan, nil
	}
	fail := func(err error) (*packagePlan, error) {
		plan.release(a, st, name)
		return nil, err
	}
	home := a.getenv("HOME")
	installer := &pkgrun.Installer{
		Launcher:  &sandbox.Launcher{},
		Untrusted: permission.Untrusted(st.Workspace(), home, nil),
		Root:      root,
		Progress:  a.Err,
		Terminal:  isTerminal(a.Err),
	}
	said := false
	for _, s := range servers {
		head := fmt.Sprintf("- %s (%s): ", s.name, s.line)
		switch {
		case s.err != nil:
			plan.lines = append(plan.lines, fmt.Sprintf("%s%v; gemkit mcp does not start it", head, s.err))
			plan.unpinnable = append(plan.unpinnable, s)
			continue
		case s.inv.Ecosystem == runnerline.PyPI:
			plan.lines = append(plan.lines, fmt.Sprintf("%s%v", head, &runnerline.PyPIError{Invocation: s.inv}))
			plan.unpinnable = append(plan.unpinnable, s)
			continue
		}
		prev := previous(st, name, old, s.name)
		was, had, there := prev.pin, prev.had, prev.there
		same := there && was.Request == s.inv.Request() && was.Runner == s.inv.Runner && was.ScriptsRun == scripts
		if same && !refresh {
			plan.pins[s.name] = was
			plan.lines = append(plan.lines, fmt.Sprintf("%s%s %s, pinned as before", head, was.Package, was.Version))
			continue
		}
		if !said {
			fmt.Fprintf(a.Err, "Pinning the packages %s's servers fetch through a package runner:\n", extension.Printable(name))
			said = true
		}
		req := pkgrun.Request{Extension: name, Server: s.name, Invocation: s.inv, Scripts: scripts}
		if same {
			// Asked again (an update): what the registry would install
			// now is resolved first, from the packages' metadata, and
			// installed only when it is not the pinned tree.
			r, err := installer.Resolve(ctx, req)
			if err != nil {
				return fail(fmt.Errorf("%s's MCP server %s: %w", extension.Printable(name), extension.Printable(s.name), err))
			}
			if same, err := r.Same(was.Tree); err == nil && same && r.Registry == was.Registry {
				plan.pins[s.name] = was
				plan.lines = append(plan.lines, fmt.Sprintf("%s%s %s, unchanged: the registry has nothing new for it", head, was.Package, was.Version))
				continue
			}
		}
		t, err := installer.Install(ctx, req)
		if err != nil {
			return fail(fmt.Errorf("%s's MCP server %s: %w", extension.Printable(name), extension.Printable(s.name), err))
		}
		plan.fresh = append(plan.fresh, t.Dir)
		c, err := st.ReadContent(t.Dir)
		if err != nil {
			return fail(fmt.Errorf("%s's MCP server %s: hashing the tree installed for it: %w", extension.Printable(name), extension.Printable(s.name), err))
		}
		p := extension.Pin{Runner: s.inv.Runner, Request: s.inv.Request(), Package: t.Package, Version: t.Version, Newest: t.Newest, Choice: t.Engine.Choice(),
			Integrity: t.Integrity, Tree: t.Dir, Program: t.Program, Lock: t.Lock, Digest: c.Digest, Registry: t.Registry,
			Packages: t.Packages, Files: t.Files, Bytes: t.Bytes, ScriptsRun: t.ScriptsRun, ScriptsNotRun: t.ScriptsNotRun}
		if had && was.Request == p.Request && was.Runner == p.Runner && was.Lock == p.Lock && was.Version == p.Version && was.ScriptsRun == p.ScriptsRun && there {
			// The registry has nothing new: the pin stays, and the
			// tree just made goes. A pin for another request (a new
			// version's manifest naming the same package otherwise)
			// would not be started, however alike its tree.
			plan.pins[s.name] = was
			plan.lines = append(plan.lines, fmt.Sprintf("%s%s %s, unchanged: the registry has nothing new for it", head, was.Package, was.Version))
			continue
		}
		lines := append(installedLines(name, head, p, prev), reachedLines(t.Network)...)
		if w := t.Engine.Warning(t.Package, t.Version, "gemkit extensions update "+extension.Printable(name)+" --consent"); w != "" {
			lines = append(lines, "  "+w)
		}
		plan.pins[s.name] = p
		plan.lines = append(plan.lines, lines...)
	}
	plan.changed = !maps.EqualFunc(old.Packages, plan.pins, samePin)
	return plan, nil
}

// previousPin is a server's pin before, as it is found now.
type previousPin struct {
	pin extension.Pin
	// had: there was one; there: its tree is still the one pinned;
	// changed: how it is not, when it is there all the same.
	had, there bool
	changed    error
}

// previous is the pin of the server of the extension name in old, and
// whether its tree is still the one pinned. A tree is never agreed to
// again without that check: any process of the person's may have
// written it since (extmcp.PinnedTreeChanged).
func previous(st *extension.Store, name string, old extension.ServerChoice, server string) previousPin {
	p := previousPin{}
	if p.pin, p.had = old.Packages[server]; !p.had {
		return p
	}
	if _, err := os.Lstat(p.pin.Tree); err == nil {
		p.changed = extmcp.PinnedTreeChanged(st, name, p.pin)
	}
	p.there = p.changed == nil && pinnedProgramThere(p.pin)
	return p
}

// installedLines say what was installed for a server as p (head the
// beginning of its line), what changed from its pin before (prev), and
// the install scripts that did not run.
func installedLines(name, head string, p extension.Pin, prev previousPin) []string {
	lines := []string{fmt.Sprintf("%s%s %s installed", head, p.Package, p.Version)}
	switch {
	case p.Choice != "":
		lines[0] += ", " + p.Choice
	case p.Newest:
		lines[0] += ", the newest"
	}
	if was := prev.pin; prev.had {
		what := fmt.Sprintf("%s %s → %s", was.Package, was.Version, p.Version)
		if was.Version == p.Version {
			what = fmt.Sprintf("%s %s, the same version", was.Package, was.Version)
		}
		switch {
		case prev.changed != nil:
			what += "; the tree pinned before is not as you agreed to it (" + prev.changed.Error() + "): installed again from the registry"
		case !prev.there:
			what += "; the tree pinned before is no longer there (" + was.Tree + "): installed again"
		default:
			if c, err := pkgrun.Diff(was.Tree, p.Tree); err == nil {
				what += "; packages: " + c.Words(6)
			}
		}
		lines = append(lines, "  changed since you agreed: "+what)
	}
	if n := len(p.ScriptsNotRun); n > 0 {
		who := p.ScriptsNotRun[0] + " has install scripts"
		if n > 1 {
			who = strings.Join(p.ScriptsNotRun, ", ") + " have install scripts"
		}
		lines = append(lines, fmt.Sprintf("  %s, which did not run: the server may not work without them. To let them run (after npm fetched the packages, in a sandbox of their own with no network and none of your npm configuration): gemkit extensions sandbox %s --allow-install-scripts", who, extension.Printable(name)))
	}
	return lines
}

// reachedLines name the person's settings an install reached and
// trusted the registry with (pkgrun.Tree.Network), which the server
// never gets.
func reachedLines(network []string) []string {
	if len(network) == 0 {
		return nil
	}
	return []string{"  fetched as your npx would: " + strings.Join(network, ", ") + "; none of these settings is given to the server"}
}

// samePin reports whether a and b pin the same bytes the same way.
func samePin(a, b extension.Pin) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// treeThere reports whether a pinned tree is still where it was put.
func treeThere(dir string) bool {
	fi, err := os.Lstat(dir)
	return err == nil && fi.IsDir()
}

// writePackageLines writes what resolving said, under a heading.
func writePackageLines(a *app, plan *packagePlan) {
	if plan == nil || len(plan.lines) == 0 {
		return
	}
	fmt.Fprintln(a.Out, "\nIts servers' packages, pinned: gemkit runs each from its tree, never from the registry. "+geminiFetches)
	for _, l := range plan.lines {
		fmt.Fprintf(a.Out, "  %s\n", extension.Printable(l))
	}
}

func sortedPins(m map[string]extension.Pin) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// removeTrees removes the trees of the extension name, being
// uninstalled.
func removeTrees(a *app, st *extension.Store, name string) {
	if err := pkgrun.Remove(packagesRoot(st), name); err != nil {
		fmt.Fprintf(a.Err, "gemkit: removing the packages pinned for %s: %v\n", extension.Printable(name), err)
	}
}
