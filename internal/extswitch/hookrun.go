package extswitch

import (
	"context"
	"fmt"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/exthook"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// A switched hook runs as a hook of gemkit's in the host's settings,
// `gemkit extensions hook NAME LABEL` (hookCommand), which reads the
// hook from the store (LoadHook) and runs it in the sandbox
// (internal/exthook) once the person's consent to the extension as it is
// now holds (LoadedHook.Consent). After a run, a warm server sets up the
// next run's sandbox ahead (ServeWarm, Linux).

// LoadedHook is a hook as the extension store has it now, ready to run.
type LoadedHook struct {
	sw  *Switch
	In  *extension.Installed
	Ext *extension.Extension
	H   *exthook.Hook
}

// LoadHook reads the hook label of the installed extension in (name as
// the host's hook names it), switched, run in the workspace wd says
// with the host's environment environ, or says why it does not run. Its Gate checks the person's consent to the
// extension as it is when it runs. A warm server watches every file and
// folder it reads (WatchStore): a read added here must be named there.
func (s *Switch) LoadHook(in *extension.Installed, name, label string, wd func() (string, error), environ []string) (*LoadedHook, error) {
	if in.Extension == nil {
		return nil, fmt.Errorf("the extension %s cannot be read: %v", extension.Printable(name), in.Err)
	}
	ext := in.Extension
	c, err := s.Store.ServerChoice(ext.Manifest.Name)
	if err != nil {
		return nil, err
	}
	var switched *extension.SwitchedHook
	for i, h := range c.Hooks {
		if h.Label == label && h.Command != "" {
			switched = &c.Hooks[i]
		}
	}
	if !c.Switched || switched == nil {
		return nil, fmt.Errorf("%s's hook %s is not switched to gemkit; gemkit extensions sandbox %s switches it", extension.Printable(name), extension.Printable(label), extension.Printable(name))
	}
	hooks, err := ext.CommandHooks()
	if err != nil {
		return nil, fmt.Errorf("%s's hooks: %v", extension.Printable(name), err)
	}
	var hook *extension.CommandHook
	for i, h := range hooks {
		if h.Label == label {
			hook = &hooks[i]
		}
	}
	if hook == nil {
		return nil, fmt.Errorf("%s has no hook %s any more; gemkit extensions sandbox %s takes its hooks as they are now", extension.Printable(name), extension.Printable(label), extension.Printable(name))
	}
	ws, err := wd()
	if err != nil {
		return nil, err
	}
	w := c.HookWidening[label]
	h := &exthook.Hook{Extension: ext.Manifest.Name, Dir: ext.Dir, Hook: *hook, Settings: declaredSettings(in), Widening: w,
		Workspace: ws, Environ: environ}
	if w.Write != "" {
		h.ReadOnly = append(h.ReadOnly, installedFolders(s.Store)...)
	}
	lh := &LoadedHook{sw: s, In: in, Ext: ext, H: h}
	h.Gate = func(context.Context) error { return lh.Consent(nil) }
	return lh, nil
}

// Consent is the check a hook's command waits for: the person agreed
// to the extension as it is now, its hooks included (the extension's
// files as they were then). It runs while the sandbox is set up
// (sandbox.Command.Gate): the command is executed only once it has
// passed, and never when it fails, whose words are the refusal's.
// checked, when set, is the extension's files as read already by a
// caller that knows they have not changed since (a warm server's watch
// of the folder); nil reads them.
func (lh *LoadedHook) Consent(checked *CheckedFiles) error {
	st, ext, name := lh.sw.Store, lh.Ext, lh.Ext.Manifest.Name
	var state extension.ConsentState
	var err error
	if checked != nil {
		state, err = st.ConsentTo(ext, checked.Content, checked.Err)
	} else {
		state, err = st.Consent(ext)
	}
	if err != nil {
		return fmt.Errorf("consent to %s cannot be checked: %v", extension.Printable(name), err)
	}
	if !state.Granted {
		return fmt.Errorf("you have not agreed to the extension %s as it is now (its hooks included); run %s", extension.Printable(name), consentHint(name))
	}
	// The folders a sandboxed process may write are found (listing
	// every installed extension) only for an extension with links out
	// of its folder, which they concern: a hook runs at every tool call.
	var writable []string
	if len(state.Content.LinksOut) > 0 {
		writable = lh.sw.policy().Writable()
	}
	return state.Content.Bindable(ext.Dir, writable)
}

// CheckedFiles is an extension's files as Store.CheckFiles read them.
type CheckedFiles struct {
	Content extension.Content
	Err     error
}

// declaredSettings are the values of in's declared settings, by
// variable, from its settings files: the values Gemini CLI adds to a
// hook's env.
func declaredSettings(in *extension.Installed) map[string]string {
	all, err := toolrun.InstalledSettings(in)
	if err != nil {
		all = map[string]string{}
	}
	out := map[string]string{}
	for _, s := range in.Extension.Manifest.Settings {
		if v, ok := all[s.EnvVar]; ok {
			out[s.EnvVar] = v
		}
	}
	return out
}

// installedFolders are every installed extension's folder and linked
// source.
func installedFolders(st *extension.Store) []string {
	all, err := st.List()
	if err != nil {
		return nil
	}
	var out []string
	for _, in := range all {
		out = append(out, in.Entry)
		if in.Extension != nil {
			out = append(out, in.Extension.Dir)
		}
	}
	return out
}
