package extswitch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/permission"
)

// The switch itself (gemkit extensions sandbox NAME): an extension's
// stdio and remote servers, its agents' servers and its command hooks
// taken from the host into gemkit's sandbox, once the person agrees to
// what they may do there. Prepare finds what there is to switch and
// checks it; the caller shows the terms (Prepared.Next) and asks the
// person when they are more than before (Prepared.NeedsAgreement); then
// Commit switches and records the consent.

// OnRequest is what the person asks of the switch on.
type OnRequest struct {
	// Hook, when set, is the label of the hook the widening is for.
	Hook string
	// Widen adds the widening asked for to w, or says why it cannot, in
	// the words of what asked it.
	Widen func(w *extension.Widening) error
	// DefaultProfile forgets the widening first; InstallScripts lets
	// the packages' install scripts run.
	DefaultProfile, InstallScripts bool
	// HostsOnly: it asks for hosts alone (or the default profile), which
	// is all an extension with remote servers only takes (RemoteOnly).
	HostsOnly bool
	// Command is the command line that asks for it, for the words.
	Command string
	// Pinning is called before the first package is installed.
	Pinning func()
}

// Prepared is a switch on checked and ready to be agreed to: what it
// switches, then what each step found.
type Prepared struct {
	sw  *Switch
	in  *extension.Installed
	req OnRequest
	Ext *extension.Extension
	// RemoteOnly: the extension has nothing to switch but remote
	// servers, and the request asks for hosts alone: nothing was done,
	// and the caller widens those.
	RemoteOnly bool
	Parts      *Parts
	// Old is the extension's choice before the switch; W and HW are the
	// servers' and the hooks' widenings after it, Scripts whether its
	// packages' install scripts run.
	Old     extension.ServerChoice
	W       extension.Widening
	HW      map[string]extension.Widening
	Scripts bool
	// Path is the host's settings file, Settings what it holds.
	Path     string
	Settings Settings
	Plan     *Plan
	State    extension.ConsentState
	// Handed are the credentials files the servers are to be handed, as
	// found now at their kinds' own places (credentials).
	Handed []permission.HandedFile
	// Links are the links a copy of the extension made absolute, which
	// the switch makes relative again.
	Links []extension.CopiedLink
}

// Prepare checks the switch on of in with the widening req asks for,
// changing nothing but what a refusal says it did (a hold of files
// gemkit cannot read). Its steps: what there is to switch, the widening
// asked for, the credentials, the checks against the host's settings,
// the packages pinned, and what would keep gemkit mcp from serving.
func (s *Switch) Prepare(ctx context.Context, in *extension.Installed, req OnRequest) (*Prepared, error) {
	ext := in.Extension
	p := &Prepared{sw: s, in: in, req: req, Ext: ext}
	parts, err := s.Parts(ext)
	if err != nil {
		return nil, err
	}
	p.Parts = parts
	if len(parts.Unreadable) > 0 {
		return nil, s.holdUnreadable(ext, parts.Unreadable)
	}
	if done, err := p.nothingToSwitch(); done {
		return p, err
	}
	if p.Old, err = s.Store.ServerChoice(ext.Manifest.Name); err != nil {
		return nil, err
	}
	for _, step := range []func() error{p.widening, p.credentials, p.checkSettings} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	// The packages its package-runner servers fetch are pinned before
	// anything is agreed to: the consent text names them.
	if p.Plan, err = s.Resolve(ctx, ext, p.Old, p.Scripts, false, req.Pinning); err != nil {
		return nil, fmt.Errorf("not switched: %w", err)
	}
	if err := p.checkServable(); err != nil {
		p.Plan.Release()
		return nil, err
	}
	return p, nil
}

// Release gives back what the plan of its packages holds.
func (p *Prepared) Release() {
	if p != nil {
		p.Plan.Release()
	}
}

// AgentLocal reports whether one of the extension's agents has a server
// gemkit runs in its sandbox.
func (p *Prepared) AgentLocal() bool {
	return slices.ContainsFunc(p.Parts.Agents, func(s extension.AgentServer) bool { return extension.SandboxedServer(s.Def) })
}

// nothingToSwitch handles an extension with no stdio server, agent
// server or command hook gemkit can run: its remote servers alone are
// widened (RemoteOnly) when that is all the request asks, else the
// switch is refused in words. done is false when there is something to
// switch.
func (p *Prepared) nothingToSwitch() (done bool, err error) {
	m := p.Ext.Manifest
	hooks := slices.ContainsFunc(p.Parts.Hooks, Hook.Switchable)
	if len(extension.SandboxedServers(m)) > 0 || p.AgentLocal() || hooks {
		return false, nil
	}
	if len(extension.RemoteServers(m)) > 0 && p.req.HostsOnly {
		p.RemoteOnly = true
		return true, nil
	}
	why := "gemkit runs stdio servers, those with a command, of its manifest and its agents, and its command hooks, and takes an extension's remote servers along only with them: alone, they stay Gemini CLI's; gemkit itself stays as it is"
	if cs := extension.ContainerServers(m); len(cs) > 0 {
		why = strings.Join(cs, ", ") + ": " + extension.ContainerWords(extension.ContainerCommand(m.MCPServers[cs[0]]))
	}
	if len(p.Parts.Hooks) > 0 {
		why += "; its hooks cannot be taken from Gemini CLI: " + hookWhys(p.Parts.Hooks)
	}
	return true, refuse("%s has no MCP server gemkit can run in its sandbox (%s)", extension.Printable(m.Name), why)
}

// widening computes the servers' and hooks' widenings the request asks
// for on top of the old ones (Hook widens that hook alone;
// DefaultProfile starts again from nothing), and whether install
// scripts run.
func (p *Prepared) widening() error {
	req := p.req
	p.W, p.HW = p.Old.Widening, maps.Clone(p.Old.HookWidening)
	if req.Hook != "" {
		if !slices.ContainsFunc(p.Parts.Hooks, func(h Hook) bool { return h.Label == req.Hook }) {
			return fmt.Errorf("--hook %s: %s has no command hook of that name; its hooks are %s", extension.Printable(req.Hook), extension.Printable(p.Ext.Manifest.Name), hookLabels(p.Parts.Hooks))
		}
		if p.HW == nil {
			p.HW = map[string]extension.Widening{}
		}
		hookW := p.HW[req.Hook]
		if req.DefaultProfile {
			hookW = extension.Widening{}
		}
		if err := req.Widen(&hookW); err != nil {
			return err
		}
		if hookW.Empty() {
			delete(p.HW, req.Hook)
		} else {
			p.HW[req.Hook] = hookW
		}
	} else {
		if req.DefaultProfile {
			p.W = extension.Widening{}
		}
		if err := req.Widen(&p.W); err != nil {
			return err
		}
	}
	// Install scripts are a widening of the servers' installs: the
	// default profile of the servers takes them back.
	p.Scripts = p.Old.InstallScripts && !(req.DefaultProfile && req.Hook == "") || req.InstallScripts
	return nil
}

// credentials finds the files of the kinds of credentials the servers
// are to be handed (the manifest's grant and the widening's), for the
// person to agree to as they are now: each at its kind's own place in
// their home, never where a variable points. A file that is not the
// kind's, or a variable of this environment naming another, refuses
// the switch in words; a kind with none is handed nothing (a note says
// so after the switch).
func (p *Prepared) credentials() error {
	p.Handed = nil
	getenv := p.sw.Getenv
	for _, k := range extension.ServerGrant(p.Ext.Manifest).Union(p.W).Credentials {
		files, err := permission.HandCredentials(k, getenv("HOME"), getenv)
		var none *permission.NoCredentialsError
		if errors.As(err, &none) {
			continue
		}
		if err != nil {
			return refuse("not switched: %w; then run `%s` again", err, p.req.Command)
		}
		p.Handed = append(p.Handed, files...)
	}
	return nil
}

// checkSettings reads the host's settings and refuses a switch whose
// exclusions there would stop what is not the extension's: a server of
// the person's of the same name, a hook of the same name or command, or
// gemkit mcp's own entry under a name the extension uses.
func (p *Prepared) checkSettings() error {
	s, m, name := p.sw, p.Ext.Manifest, p.Ext.Manifest.Name
	p.Path = s.Host.SettingsPath()
	var err error
	if p.Settings, err = s.Host.Read(); err != nil {
		return err
	}
	if n := gemkitNameTaken(m, p.Settings); n != "" {
		return refuse("not switched: %s: %s", extension.Printable(name), gemkitNameWords(n))
	}
	if clash := SharedNames(p.Parts.Names, p.Settings.Servers); len(clash) > 0 {
		return refuse("not switched: Gemini CLI's mcp.excluded names servers, not extensions, and your own mcpServers in %s has %s, which excluding %s's servers of the same name would stop too; rename yours first", p.Path, strings.Join(clash, ", "), extension.Printable(name))
	}
	sw, err := s.Store.Switches()
	if err != nil {
		return err
	}
	if clash := s.hookClashes(name, p.Parts, p.Settings, sw); len(clash) > 0 {
		return refuse("not switched: Gemini CLI's hooksConfig.disabled names hooks by their name, or their command when they have none, whoever they are from; %s. Nothing was changed; rename yours, or switch the other extension too", strings.Join(clash, "; "))
	}
	return nil
}

// hookLabels are the labels of hooks, for words.
func hookLabels(hooks []Hook) string {
	if len(hooks) == 0 {
		return "none"
	}
	var out []string
	for _, h := range hooks {
		out = append(out, h.Label)
	}
	return strings.Join(out, ", ")
}

// hookWhys say why each hook the switch cannot take stays the host's.
func hookWhys(hooks []Hook) string {
	var out []string
	for _, h := range hooks {
		if !h.Switchable() {
			out = append(out, h.Label+": "+h.Why)
		}
	}
	return strings.Join(out, "; ")
}
