package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// widenRemote records the hosts an extension with remote servers only
// may reach when gemkit mcp connects to them (gemkit mcp
// --extension-servers), where they are an address of this computer or
// of a private network (extmcp's rule, the proxy's): such an extension
// is not switched (its remote servers stay Gemini CLI's unless a stdio
// server goes with them), but gemkit mcp reaches such an address for it
// only when the person allowed that host and port by name, agreed to
// with the extension's consent.
func widenRemote(ctx context.Context, a *app, st *extension.Store, ext *extension.Extension, o sandboxFlags, command string) error {
	name := ext.Manifest.Name
	old, err := st.ServerChoice(name)
	if err != nil {
		return err
	}
	w := old.Widening
	if o.defaultProfile {
		w = extension.Widening{}
	}
	w.Hosts = append(slices.Clone(w.Hosts), o.hosts...)
	if w, err = w.Canonical(); err != nil {
		return fmt.Errorf("--allow-host: %w", err)
	}
	next := old
	next.Widening = w
	state, err := st.Consent(ext)
	if err != nil {
		return err
	}
	if state.Notice != "" {
		fmt.Fprintln(a.Out, extension.Printable(state.Notice))
	}
	for _, l := range extension.ConsentTextWith(ext, "Allowing hosts for the remote servers of", next) {
		fmt.Fprintln(a.Out, l)
	}
	if !state.Granted || extswitch.Widens(old.Widening, w) {
		a.readBeforeAgreeing(a.Out)
		if ok, err := a.personConfirms(ctx, name, "`"+command+"`"); err != nil || !ok {
			return cmp.Or(err, notTyped(name))
		}
	}
	if err := st.UpdateServerChoice(name, func(c *extension.ServerChoice, _ *[]string) { c.Widening = w }); err != nil {
		return err
	}
	if err := st.RecordConsentContent(name, state.Hash, state.Content); err != nil {
		return err
	}
	fmt.Fprintf(a.Out, "\n%s has remote servers only, which stay Gemini CLI's (gemkit switches them only with a stdio server). When gemkit mcp --extension-servers connects to them, %s. Consent recorded to %s as it is now.\n",
		extension.Printable(name), remoteReach(w.Hosts), extension.Printable(name))
	return nil
}

// remoteReach says which addresses of this computer or of a private
// network gemkit mcp may reach for an extension's remote servers: the
// hosts allowed by name, or none.
func remoteReach(hosts []string) string {
	if len(hosts) == 0 {
		return "it reaches no address of this computer or of a private network"
	}
	return "it may reach " + strings.Join(hosts, ", ") + ", and no other address of this computer or of a private network"
}
