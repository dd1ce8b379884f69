package extview

import (
	"errors"
	"fmt"
	"io"

	"github.com/gemkit/gemkit/internal/extension"
)

// WriteStopped says, after an install, link or update, what of the
// extension gemkit does not run: an Agent Plugins plugin's skipped parts
// (writePluginSkips); else the extension's own tools, and why: its manifest has
// problems in the fields only gemkit reads, which Gemini CLI installs all
// the same (and so does gemkit, its MCP servers and the rest with it).
func WriteStopped(w io.Writer, in *extension.Installed) {
	if in != nil && in.Extension != nil && in.Extension.Plugin != nil {
		writePluginSkips(w, in.Extension)
		return
	}
	var ve *extension.ValidationError
	if in == nil || in.Extension == nil || !errors.As(in.Err, &ve) {
		return
	}

	fmt.Fprintf(w, "gemkit does not run %s's own tools until its manifest is fixed (the rest of it is installed, as in Gemini CLI, which does not read those fields):\n", in.Extension.Manifest.Name)
	for _, p := range ve.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	fmt.Fprintf(w, "`gemkit extensions validate %s` checks it again.\n", in.Extension.Dir)
}

// writePluginSkips says, after an Agent Plugins plugin's install, link
// or update, what of it gemkit leaves out (a server or skill its
// specification has skipped: ext.Problems, warnings all), which the
// person would otherwise learn only from describe or validate.
func writePluginSkips(w io.Writer, ext *extension.Extension) {
	if len(ext.Problems) == 0 {
		return
	}

	fmt.Fprintf(w, "Not all of %s is served (the rest is installed):\n", ext.Manifest.Name)
	for _, p := range ext.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	fmt.Fprintf(w, "`gemkit extensions validate %s` checks it again.\n", ext.Dir)
}
