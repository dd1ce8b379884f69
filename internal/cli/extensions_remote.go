package cli

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// widenRemote records the hosts an extension with remote servers only
// may reach when gemkit mcp connects to them (gemkit mcp
// --extension-servers; extswitch.Switch.WidenRemote), once the person
// agrees.
func widenRemote(ctx context.Context, a *app, st *extension.Store, ext *extension.Extension, o sandboxFlags, command string) error {
	name := ext.Manifest.Name
	sw := a.switcher(st)
	rw, err := sw.WidenRemote(ext, o.hosts, o.defaultProfile)
	if err != nil {
		return err
	}
	if rw.State.Notice != "" {
		fmt.Fprintln(a.Out, extension.Printable(rw.State.Notice))
	}
	for _, l := range extension.ConsentTextWith(ext, "Allowing hosts for the remote servers of", rw.Next) {
		fmt.Fprintln(a.Out, l)
	}
	if rw.Asks {
		a.readBeforeAgreeing(a.Out)
		if ok, err := a.personConfirms(ctx, name, "`"+command+"`"); err != nil || !ok {
			return cmp.Or(err, notTyped(name))
		}
	}
	if err := sw.RecordRemote(name, rw); err != nil {
		return err
	}
	fmt.Fprintf(a.Out, "\n%s has remote servers only, which stay Gemini CLI's (gemkit switches them only with a stdio server). When gemkit mcp --extension-servers connects to them, %s. Consent recorded to %s as it is now.\n",
		extension.Printable(name), remoteReach(rw.Next.Widening.Hosts), extension.Printable(name))
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
