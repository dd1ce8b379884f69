package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/lspbroker"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// newRunner is the tool runner of every command that runs extension
// tools (extensions run, mcp, run, chat, acp): consent and the installed
// extensions from st, st's own folder closed to every tool, tools
// started by l, consent asked through ask (nil: nobody can be asked) and
// refusals that name the command which records consent. log nil is the
// runner's default.
func newRunner(st *extension.Store, l *sandbox.Launcher, ask toolrun.Asker, log *slog.Logger) *toolrun.Runner {
	return &toolrun.Runner{
		Launcher:     l,
		Consent:      st,
		Installed:    st,
		Ask:          ask,
		AgreeCommand: agreeCommand,
		Protected:    append([]string{filepath.Dir(st.Dir())}, runtimeDirs()...),
		Logger:       log,
	}
}

// runtimeDirs are gemkit's own folders in shared runtime and temporary
// folders, closed to every tool: the code-intelligence brokers' sockets,
// locks and logs (and the servers' records in /tmp/gemkit-<uid>), for
// every environment a gemkit process of this user may have.
func runtimeDirs() []string {
	return lspbroker.Dirs([]string{os.Getenv("XDG_RUNTIME_DIR")}, []string{os.Getenv("TMPDIR"), os.Getenv("TMP"), os.Getenv("TEMP")})
}

// agreeCommand is the command that records consent to an extension's
// permissions and files, and runs nothing.
func agreeCommand(ext string) string { return extmcp.AgreeCommand(ext) }

// stderrLauncher starts tools for a command run by a person: each
// connection the sandbox refuses is a line on w as it happens.
func stderrLauncher(w io.Writer, allowUnconfined bool) *sandbox.Launcher {
	return &sandbox.Launcher{
		AllowUnconfined: allowUnconfined,
		OnDeny: func(d netproxy.Denial) {
			fmt.Fprintf(w, "gemkit: sandbox: %s\n", extension.Printable(d.String()))
		},
	}
}
