package cli

import (
	"context"
	"fmt"

	"github.com/gemkit/gemkit/internal/extension"
)

// keepAgreed makes gemkit's copy of ext as the person just agreed to it
// (extension.Store.KeepAgreedCopy), which gemkit mcp shows its stdio
// servers in place of its folder, so that a start checks nothing of the
// folder; only for an extension that has such servers. A copy that
// cannot be made is said on stderr: gemkit mcp then checks the folder
// at each start, as it would without one.
func keepAgreed(ctx context.Context, a *app, st *extension.Store, ext *extension.Extension) {
	if ext == nil || ext.Manifest == nil || len(extension.SandboxedServers(ext.Manifest)) == 0 {
		return
	}
	if _, err := st.KeepAgreedCopy(ctx, ext); err != nil {
		fmt.Fprintf(a.Err, "gemkit: %s; gemkit mcp checks its folder at each start of its servers instead.\n", extension.Printable(err.Error()))
	}
}

// keepAgreedNamed is keepAgreed of the installed extension name.
func keepAgreedNamed(ctx context.Context, a *app, st *extension.Store, name string) {
	if in, err := st.Get(name); err == nil {
		keepAgreed(ctx, a, st, in.Extension)
	}
}
