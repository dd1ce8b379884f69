package extswitch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/pkgrun"
	"github.com/gemkit/gemkit/internal/runnerline"
)

// A switched extension's package-runner servers (npx -y pkg, npm exec,
// pnpm dlx, bunx, yarn dlx) are pinned when the person switches it or
// agrees to it, and pinned again by update: gemkit installs each one's
// package once, at an exact version, in its sandbox (an Ecosystem), and
// the pins go into the consent with the rest. gemkit mcp runs the
// server from the pinned tree, never from the registry.

// Plan is what resolving an extension's package-runner servers came to:
// the pins to record and what to tell the person.
type Plan struct {
	Pins map[string]extension.Pin
	// Lines say, per server, what is pinned, what changed, or why it
	// cannot be: a line "- server (its command): ..." and the lines
	// under it, indented.
	Lines []string
	// Changed: the pins differ from the ones recorded.
	Changed bool
	// Unpinnable are the servers whose line cannot be pinned, or whose
	// registry gemkit pins nothing of: gemkit mcp never starts them
	// (cannotPin).
	Unpinnable []RunnerServer
	unlock     func()
	sw         *Switch
	ext        string
}

// Release gives back the extension's lock of its trees, once the pins
// are recorded or not, and removes the trees the records no longer pin
// (or never pinned: those installed for a consent not given). A record
// that cannot be read removes nothing.
func (p *Plan) Release() {
	if p == nil || p.unlock == nil {
		return
	}
	if c, err := p.sw.Store.ServerChoice(p.ext); err == nil {
		pkgrun.Prune(p.sw.packagesRoot(), p.ext, c.PinnedTrees())
	}
	p.unlock()
	p.unlock = nil
}

// packagesRoot is the folder of the trees pinned for the store's
// extensions: pkgrun.Root of the home folder that holds its .gemini, so
// that the pins and their trees go together.
func (s *Switch) packagesRoot() string { return pkgrun.Root(s.Store.Home()) }

// RunnerServer is a stdio server whose command is a package runner.
type RunnerServer struct {
	Name string
	// Line is its command line as the manifest writes it.
	Line string
	Inv  runnerline.Invocation
	Err  error
}

// RunnerServers are ext's stdio servers started by a package runner,
// its manifest's by name and then its agents' by label (agent/server,
// ws their ${workspacePath}), each read (runnerline.Parse) or with why it
// cannot be.
func RunnerServers(ext *extension.Extension, ws string) []RunnerServer {
	var out []RunnerServer
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
			out = append(out, RunnerServer{Name: name, Line: line, Inv: inv, Err: err})
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

// Resolve pins the package of each of ext's package-runner servers: a
// server whose pin still matches what the manifest asks (and the
// person's choice of install scripts) keeps it, unless refresh (update:
// the registry is asked again); the others are installed now. It holds
// the extension's lock of its trees until the plan is released. A failed
// or interrupted install fails it all, and leaves the trees as they
// were. pinning, when set, is called before the first install.
func (s *Switch) Resolve(ctx context.Context, ext *extension.Extension, old extension.ServerChoice, scripts, refresh bool, pinning func()) (*Plan, error) {
	servers := RunnerServers(ext, s.Store.Workspace())
	name := ext.Manifest.Name
	plan := &Plan{Pins: map[string]extension.Pin{}, sw: s, ext: name}
	if len(servers) == 0 && len(old.Packages) == 0 {
		return plan, nil
	}
	// Held until the plan is released, which removes the trees the
	// records no longer pin: with no package-runner server left, those
	// of the old pins, once the choice without them is recorded.
	unlock, err := pkgrun.Lock(s.packagesRoot(), name)
	if err != nil {
		return nil, err
	}
	plan.unlock = unlock
	if len(servers) == 0 {
		plan.Changed = true
		return plan, nil
	}
	r := &resolving{sw: s, plan: plan, old: old, scripts: scripts, refresh: refresh, pinning: pinning}
	for _, rs := range servers {
		if err := r.pin(ctx, rs); err != nil {
			plan.Release()
			return nil, fmt.Errorf("%s's MCP server %s: %w", extension.Printable(name), extension.Printable(rs.Name), err)
		}
	}
	plan.Changed = !maps.EqualFunc(old.Packages, plan.Pins, samePin)
	return plan, nil
}

// resolving is one Resolve under way.
type resolving struct {
	sw               *Switch
	plan             *Plan
	old              extension.ServerChoice
	scripts, refresh bool
	pinning          func()
	said             bool
}

// pin pins rs, or says why it cannot be, in the plan.
func (r *resolving) pin(ctx context.Context, rs RunnerServer) error {
	plan, name := r.plan, r.plan.ext
	head := fmt.Sprintf("- %s (%s): ", rs.Name, rs.Line)
	eco, ok := r.sw.pinsFrom(rs.Inv.Ecosystem)
	switch {
	case rs.Err != nil:
		plan.Lines = append(plan.Lines, fmt.Sprintf("%s%v; gemkit mcp does not start it", head, rs.Err))
		plan.Unpinnable = append(plan.Unpinnable, rs)
		return nil
	case !ok:
		plan.Lines = append(plan.Lines, fmt.Sprintf("%s%v", head, noEcosystem(rs.Inv)))
		plan.Unpinnable = append(plan.Unpinnable, rs)
		return nil
	}
	prev := r.sw.previous(name, r.old, rs.Name)
	was := prev.pin
	same := prev.there && was.Request == rs.Inv.Request() && was.Runner == rs.Inv.Runner && was.ScriptsRun == r.scripts
	if same && !r.refresh {
		plan.Pins[rs.Name] = was
		plan.Lines = append(plan.Lines, fmt.Sprintf("%s%s %s, pinned as before", head, was.Package, was.Version))
		return nil
	}
	if !r.said && r.pinning != nil {
		r.pinning()
	}
	r.said = true
	req := PinRequest{Extension: name, Server: rs.Name, Invocation: rs.Inv, Scripts: r.scripts,
		Update: "gemkit extensions update " + extension.Printable(name) + " --consent"}
	if same {
		// Asked again (an update): what the registry would install now
		// is resolved first, from the packages' metadata, and installed
		// only when it is not the pinned tree.
		unchanged, err := eco.Unchanged(ctx, req, was)
		if err != nil {
			return err
		}
		if unchanged {
			plan.Pins[rs.Name] = was
			plan.Lines = append(plan.Lines, fmt.Sprintf("%s%s %s, unchanged: the registry has nothing new for it", head, was.Package, was.Version))
			return nil
		}
	}
	return r.install(ctx, eco, req, rs, head, prev)
}

// install installs rs's package and pins it, unless the registry had
// nothing new for its pin before (prev).
func (r *resolving) install(ctx context.Context, eco Ecosystem, req PinRequest, rs RunnerServer, head string, prev previousPin) error {
	plan, name, was := r.plan, r.plan.ext, prev.pin
	t, err := eco.Install(ctx, req)
	if err != nil {
		return err
	}
	p := t.Pin
	c, err := r.sw.Store.ReadContent(p.Tree)
	if err != nil {
		return fmt.Errorf("hashing the tree installed for it: %w", err)
	}
	p.Runner, p.Request, p.Digest = rs.Inv.Runner, rs.Inv.Request(), c.Digest
	if prev.had && was.Request == p.Request && was.Runner == p.Runner && was.Lock == p.Lock && was.Version == p.Version && was.ScriptsRun == p.ScriptsRun && prev.there {
		// The registry has nothing new: the pin stays, and the tree
		// just made goes. A pin for another request (a new version's
		// manifest naming the same package otherwise) would not be
		// started, however alike its tree.
		plan.Pins[rs.Name] = was
		plan.Lines = append(plan.Lines, fmt.Sprintf("%s%s %s, unchanged: the registry has nothing new for it", head, was.Package, was.Version))
		return nil
	}
	lines := append(installedLines(name, head, p, prev, eco), reachedLines(t.Network)...)
	if t.Warning != "" {
		lines = append(lines, "  "+t.Warning)
	}
	plan.Pins[rs.Name] = p
	plan.Lines = append(plan.Lines, lines...)
	return nil
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
func (s *Switch) previous(name string, old extension.ServerChoice, server string) previousPin {
	p := previousPin{}
	if p.pin, p.had = old.Packages[server]; !p.had {
		return p
	}
	if _, err := os.Lstat(p.pin.Tree); err == nil {
		p.changed = extmcp.PinnedTreeChanged(s.Store, name, p.pin)
	}
	p.there = p.changed == nil && pinnedProgramThere(p.pin)
	return p
}

// installedLines say what was installed for a server as p (head the
// beginning of its line), what changed from its pin before (prev), and
// the install scripts that did not run.
func installedLines(name, head string, p extension.Pin, prev previousPin, eco Ecosystem) []string {
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
			if c, ok := eco.Changes(was, p); ok {
				what += "; packages: " + c
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

// RemoveTrees removes the trees pinned for the extension name, being
// uninstalled.
func (s *Switch) RemoveTrees(name string) error {
	return pkgrun.Remove(s.packagesRoot(), name)
}
