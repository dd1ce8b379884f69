package cli

import (
	"os"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/langserver"
	"github.com/gemkit/gemkit/internal/permission"
)

// codeIntelQuoting is what the code-intelligence answers of the
// workspace ws may quote besides its files (codeintel.Quoting): the
// read-only folders of its language servers (langserver.ReadRoots, the
// folders their sandbox profiles read), and no
// path closed to every tool (permission.ClosedPaths, with the running
// servers' secrets wherever their environment put them).
func (a *app) codeIntelQuoting(ws string, table []langserver.Server) codeintel.Quoting {
	home, _ := resolveHome("")
	getenv := a.getenv
	in := permission.ClosedInputs{
		Home: home, ConfigDir: getenv("XDG_CONFIG_HOME"), Getenv: getenv,
		TempDirs: []string{getenv("TMPDIR"), getenv("TMP"), getenv("TEMP"), os.TempDir(), "/tmp"},
	}
	locator := &permission.Locator{}
	return codeintel.Quoting{
		Roots: func() []string {
			// The environment the Pool makes the servers' profiles from.
			return langserver.ReadRoots(table, ws, os.Environ())
		},
		Closed: func() []string {
			in := in
			in.Writers = locator.Writers()
			return permission.ClosedPaths(in)
		},
	}
}
