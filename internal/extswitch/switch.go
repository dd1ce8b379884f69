package extswitch

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/shell"
)

// Switch switches the extensions of one store between their host and
// gemkit's sandbox, and keeps what it did.
type Switch struct {
	Store *extension.Store
	Host  Host
	// Ecosystems pin the packages of package-runner servers, by
	// runnerline ecosystem; a line of one not here is never started.
	Ecosystems map[string]Ecosystem
	// Binary is gemkit's program, by its full path, which the host's
	// hooks of gemkit's start; "gemkit" where the process is not gemkit.
	Binary string
	// Getenv and Environ are the person's environment (HOME: their
	// credentials, the servers' data folders).
	Getenv  func(string) string
	Environ []string
	// Version is gemkit's, which a server's listing is made with.
	Version string
}

// policy is which of the store's extensions' servers gemkit mcp serves,
// and whether they may start, for the person of s's environment.
func (s *Switch) policy() extmcp.Policy {
	return extmcp.Policy{Store: s.Store, Home: s.Getenv("HOME")}
}

// Parts is what the switch takes from the host for one extension: the
// server names its servers and its agents' servers need excluded, and
// its command hooks, each with how it is switched.
type Parts struct {
	// Names are the names to exclude: the manifest's switched servers
	// and the agents'.
	Names []string
	// Agents are the servers its agents declare.
	Agents []extension.AgentServer
	// Hooks are its command hooks, in the host's order.
	Hooks []Hook
	// HooksErr is why its hooks/hooks.json cannot be read ("" when it
	// can, or has none): Gemini CLI then loads none of them either.
	HooksErr string
	// Unreadable names each file gemkit cannot read exactly as Gemini
	// CLI does, with why: Gemini CLI may run from it what gemkit does
	// not see, so the switch holds the extension instead.
	Unreadable []string
}

// Hook is one command hook and how the switch takes it.
type Hook struct {
	extension.CommandHook
	// Key is the string of the host's disabled hooks that turns it off
	// there; "" when none does for sure, with why in Why.
	Key, Why string
	// Def is gemkit's hook in the host's settings that runs it in the
	// sandbox.
	Def HookDef
}

// Switchable reports whether the switch takes h from the host.
func (h Hook) Switchable() bool { return h.Key != "" }

// Parts reads what the switch takes of ext.
func (s *Switch) Parts(ext *extension.Extension) (*Parts, error) { return s.partsAs(ext, s.Binary) }

// partsAs is Parts with bin for gemkit's program: the checks that read
// only which hooks there are ask it as a test's binary would ("gemkit").
func (s *Switch) partsAs(ext *extension.Extension, bin string) (*Parts, error) {
	st := s.Store
	if ext.IsPlugin() {
		// Gemini CLI runs nothing of an Agent Plugins plugin (it skips
		// a folder without gemini-extension.json): there is nothing to
		// take from it, and a name of its servers in mcp.excluded would
		// only shadow the person's own server of that name.
		return &Parts{}, nil
	}
	p := &Parts{Names: extension.SwitchedServers(ext.Manifest)}
	agents, err := ext.AgentServers(st.Workspace())
	if agentread.IsUnreadable(err) {
		p.Unreadable = append(p.Unreadable, unreadableWords(err))
	} else if err != nil {
		return nil, fmt.Errorf("%s's agents: %w", extension.Printable(ext.Manifest.Name), err)
	}
	p.Agents = agents
	for _, n := range extension.SwitchedAgentServers(agents) {
		if !slices.Contains(p.Names, n) {
			p.Names = append(p.Names, n)
		}
	}
	slices.Sort(p.Names)
	hooks, err := ext.CommandHooks()
	if agentread.IsUnreadable(err) {
		p.Unreadable = append(p.Unreadable, unreadableWords(err))
		return p, nil
	}
	if err != nil {
		p.HooksErr = err.Error()
		return p, nil
	}
	for _, h := range hooks {
		sh := Hook{CommandHook: h}
		sh.Key, sh.Why = s.Host.HookKey(ext, h)
		if sh.Key != "" {
			cmd, why := hookCommand(bin, st.Home(), ext.Manifest.Name, h.Label)
			if why != "" {
				sh.Key, sh.Why = "", why
			}
			sh.Def = HookDef{Event: h.Event, Matcher: h.Matcher, Sequential: h.Sequential,
				Name: "gemkit:" + ext.Manifest.Name + ":" + h.Label, Command: cmd, Timeout: h.Timeout}
		}
		p.Hooks = append(p.Hooks, sh)
	}
	return p, nil
}

// unreadableWords say which file err, an agentread.Unreadable wrapped
// with its file's name, is about, and why: "FILE exactly as Gemini CLI
// does: WHY".
func unreadableWords(err error) string {
	file, _, _ := strings.Cut(err.Error(), ":")
	return file + " exactly as Gemini CLI does: " + agentread.Why(err)
}

// hookCommand is the command of gemkit's user-level hook that runs the
// hook label of the extension ext in the sandbox; why says why there
// is none: Gemini CLI replaces $NAME in its settings file's strings
// from its environment, so a path with one would not name the program.
func hookCommand(bin, home, ext, label string) (cmd, why string) {
	for _, s := range []string{bin, home} {
		if dollarRef().MatchString(s) {
			return "", fmt.Sprintf("the path %s holds a $, which Gemini CLI would replace in its settings file", s)
		}
	}
	return strings.Join([]string{shell.Quote(bin), "extensions", "hook", "--home", shell.Quote(home), shell.Quote(ext), shell.Quote(label)}, " "), ""
}

var dollarRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$(\w|\{)`) })

// isGemkitHook reports whether command is one of gemkit's own hooks,
// as the switch writes them (hookCommand).
func isGemkitHook(command string) bool {
	return strings.Contains(command, " extensions hook --home ")
}

// hookClashes are the other hooks that the strings of the host's
// disabled hooks which switch name's hooks would also turn off: the
// person's own (in their user settings and the workspace's) and those of
// the extensions not switched, or switched without that hook. Gemini CLI
// matches the list by name, or by command for a hook without one
// (HookRegistry.getHookName), whoever the hook is from.
func (s *Switch) hookClashes(name string, p *Parts, gs Settings, sw extension.SwitchState) []string {
	keys := map[string]string{}
	for _, h := range p.Hooks {
		if h.Switchable() {
			keys[h.Key] = h.Label
		}
	}
	if len(keys) == 0 {
		return nil
	}
	var out []string
	mine := func(file string, hooks []HostHook) {
		for _, h := range hooks {
			if label, ok := keys[h.Key]; ok && !isGemkitHook(h.Command) {
				out = append(out, fmt.Sprintf("turning off its hook %s (hooksConfig.disabled holds %q) would turn off your own %s hook %q in %s too", label, h.Key, h.Event, h.Key, file))
			}
		}
	}
	mine(s.Host.SettingsPath(), gs.Hooks)
	if wsPath, hooks, ok := s.Host.WorkspaceHooks(); ok {
		mine(wsPath, hooks)
	}
	return append(out, s.extensionClashes(name, keys, sw)...)
}

// extensionClashes are hookClashes' of the other extensions' hooks, by
// the keys of name's switched hooks (their labels).
func (s *Switch) extensionClashes(name string, keys map[string]string, sw extension.SwitchState) []string {
	all, err := s.Store.List()
	if err != nil {
		return nil
	}
	var out []string
	for _, in := range all {
		m := in.Manifest()
		if m == nil || m.Name == name {
			continue
		}
		hooks, err := in.Extension.CommandHooks()
		if err != nil {
			continue
		}
		taken := map[string]bool{}
		if c := sw.Choices[m.Name]; c.Switched {
			for _, h := range c.Hooks {
				taken[h.Key] = true
			}
		}
		for _, h := range hooks {
			k, _ := s.Host.HookKey(in.Extension, h)
			if label, ok := keys[k]; ok && k != "" && !taken[k] {
				out = append(out, fmt.Sprintf("turning off its hook %s (hooksConfig.disabled holds %q) would turn off the extension %s's hook %s too, which is not switched to gemkit", label, k, extension.Printable(m.Name), h.Label))
			}
		}
	}
	return out
}
