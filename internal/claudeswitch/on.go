package claudeswitch

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gemkit/gemkit/internal/claudeplugin"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// Short is gemkit plugins sandbox's line in the help.
const Short = "Run a Claude Code plugin's MCP servers and hooks in gemkit's sandbox instead of unconfined in Claude Code"

// Help is gemkit plugins sandbox's help: what the switch does.
const Help = `Switch a Claude Code plugin to gemkit's sandbox. gemkit makes its twin: a copy
of the plugin's folder as you agree to it, whose MCP servers gemkit mcp serves in
the sandbox and whose hooks gemkit's hook runner runs there, and a plugin of the
same name in gemkit's directory marketplace (gemkit-sandbox) that Claude Code
loads instead, with the same skills, agents and commands (the bytes you agreed
to) and gemkit's runners for everything that runs. In Claude Code's user
settings the plugin is disabled, its twin enabled, each of its servers denied
by name (plugin:P:S), and gemkit's marketplace named; the bytes replaced are
kept, and --off gives them back.

Consent and widenings are those of gemkit extensions sandbox, on the twin. A
plugin Claude Code updates after you agreed is held: nothing of it runs, and
list and describe say what changed, until you run this again.

Refused: a plugin enabled in a project's .claude settings (user settings cannot
turn it off there), and anything gemkit cannot convert exactly: a variable other
than ${CLAUDE_PLUGIN_ROOT}, ${CLAUDE_PLUGIN_DATA} and ${user_config.KEY}, a hook
that is not a command, a link out of the plugin's folder, a file Claude Code and
gemkit could read differently. docs/claude-code-plugins.md has the details.`

// Request is a switch on asked for: the plugin, and what of the
// extension switch the command gives (its switch of a store, the
// request, the person's agreement, in its words).
type Request struct {
	// ID is the plugin (P@M); Project the project whose .claude
	// settings may enable it too.
	ID, Project string
	// Switcher is the extension switch of the store st.
	Switcher func(st *extension.Store) *extswitch.Switch
	// On is the request of the twin's switch; Agree shows its terms and
	// has the person agree (an error when they do not).
	On    extswitch.OnRequest
	Agree func(ctx context.Context, p *extswitch.Prepared, terms Terms) error
	// AgreedErr is told why gemkit's copy of the twin as agreed to
	// could not be made.
	AgreedErr func(error)
	// Served says which servers the switch listed and which it could
	// not serve (words).
	Served func(x string, checks []extswitch.ServedCheck) (served, notServed []string)
}

// On switches the plugin r.ID to gemkit's sandbox, once the person
// agrees to its twin, and says on w what it did. Its refusals are
// extswitch.Refused.
func (s *Switch) On(ctx context.Context, w io.Writer, claudeDir string, r Request) error {
	h, err := claudeplugin.List(claudeDir, r.Project)
	if err != nil {
		return err
	}
	p, err := h.Find(r.ID)
	if err != nil {
		return err
	}
	conf, err := UserConfig(s.Settings, r.ID)
	if err != nil {
		return &extswitch.Refused{Err: err}
	}
	plan, err := s.Prepare(p, conf)
	if err != nil {
		return &extswitch.Refused{Err: err}
	}
	st := extension.OpenStore(s.Home)
	sw := r.Switcher(st)
	in, err := sw.Store.Get(plan.Twin.Name)
	if err != nil {
		return err
	}
	if in.Extension == nil {
		return fmt.Errorf("the twin of %s cannot be read: %w", extension.Printable(r.ID), in.Err)
	}
	prep, err := sw.Prepare(ctx, in, r.On)
	if err != nil {
		return err
	}
	if prep.RemoteOnly {
		return &extswitch.Refused{Err: fmt.Errorf("%s has only remote MCP servers and no hook: nothing of it runs on this machine, so there is nothing to sandbox; it stays Claude Code's", extension.Printable(r.ID))}
	}
	defer prep.Release()
	if err := r.Agree(ctx, prep, termsOf(p, plan.Twin, prep)); err != nil {
		return err
	}
	on, err := prep.Commit(ctx)
	r.AgreedErr(on.AgreedErr)
	if err != nil {
		return err
	}
	done, err := s.Enable(plan)
	if err != nil {
		return err
	}
	served, notServed := r.Served(plan.Twin.Name, on.Checks)
	writeSwitched(w, p, plan.Twin, done, served, notServed)
	return nil
}

// writeSwitched says what the switch of p did.
func writeSwitched(w io.Writer, p *claudeplugin.Plugin, t *Twin, done On, served, notServed []string) {
	id := extension.Printable(p.ID)
	fmt.Fprintf(w, "\nSwitched %s to gemkit's sandbox. Claude Code no longer loads it (enabledPlugins in %s) and loads its twin %s instead, with the same skills, agents and commands, as you agreed to them.\n",
		id, done.Settings, extension.Printable(TwinID(p.Name)))
	if len(t.Servers) > 0 {
		listed := ""
		if len(served) > 0 {
			listed = ", listed now: " + strings.Join(served, ", ")
		}
		fmt.Fprintf(w, "Its MCP servers %s: Claude Code no longer starts them (deniedMcpServers: %s); gemkit mcp serves them in its sandbox (the twin's server %s)%s.\n",
			extension.Printable(strings.Join(t.Servers, ", ")), extension.Printable(strings.Join(done.Denied, ", ")), ServerName, listed)
	}
	for _, l := range notServed {
		fmt.Fprintln(w, l)
	}
	if len(t.Hooks) > 0 {
		fmt.Fprintf(w, "Its hooks %s run in gemkit's sandbox: the twin's hooks run each through gemkit's hook runner, on the same event and matcher.\n", strings.Join(t.Hooks, ", "))
	}
	if parts := append(append([]string{}, t.LSP...), t.Monitors...); len(parts) > 0 {
		fmt.Fprintf(w, "Its LSP servers and monitors (%s) run in gemkit's sandbox through gemkit plugins part.\n", extension.Printable(strings.Join(parts, ", ")))
	}
	fmt.Fprintln(w, "Claude Code takes it at its next start (or /reload-plugins in a running session).")
	fmt.Fprintf(w, "If Claude Code updates %s, its twin is held until you agree again. Undo: gemkit plugins sandbox %s --off\n", id, id)
}

// Off gives the plugin id back to Claude Code, saying on w what it did:
// its twin extension switched off (sw, the extension switch of TH's
// store), its settings as they were, its twin plugin gone.
func (s *Switch) Off(w io.Writer, id string, sw func(st *extension.Store) *extswitch.Switch) error {
	recs, err := s.ReadRecords()
	if err != nil {
		return err
	}
	rec, ok := recs.Plugins[id]
	if !ok {
		fmt.Fprintf(w, "%s is not switched to gemkit: Claude Code runs it itself.\n", extension.Printable(id))
		return nil
	}
	if _, err := sw(extension.OpenStore(s.Home)).Off(rec.Twin); err != nil {
		return err
	}
	off, err := s.Disable(id)
	if err != nil {
		return err
	}
	if off.Restored {
		fmt.Fprintf(w, "Restored %s byte for byte as it was before the switch.\n", off.Settings)
	} else {
		fmt.Fprintf(w, "%s changed since the switch, so gemkit took out only its own edits (the plugin's enablement as it was, its twin, its denied servers, gemkit's marketplace when no other plugin is switched).\n", off.Settings)
	}
	fmt.Fprintf(w, "%s is Claude Code's again, which runs its servers and hooks unconfined at its next start. Switch again: gemkit plugins sandbox %s\n", extension.Printable(id), extension.Printable(id))
	return nil
}
