package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/client"
)

func newIDEBridgeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "bridge FILE",
		Short: "Relay MCP on stdin and stdout to the companion a discovery file names (what CLIs start in a container)",
		Long: `Relay MCP on stdin and stdout to the IDE companion whose discovery file (or
Qwen Code lock file) is FILE, over its Streamable HTTP endpoint on
127.0.0.1, with the token read from FILE.

gemkit ide serve names this command in the stdio field of every file it
writes. Gemini CLI and Qwen Code start it when they cannot reach the
companion's port themselves: inside a container (/.dockerenv) Gemini CLI
dials host.docker.internal rather than 127.0.0.1, unless REMOTE_CONTAINERS
or SSH_CONNECTION is set, and the bridge is how it still finds a companion
of the same container, with no step from you.

It writes nothing on stderr (the CLI shows it in its own terminal): what
goes wrong reaches the CLI as a JSON-RPC error. -v logs the relay there.
Exits 0 when stdin ends, 1 when the companion goes away or FILE cannot be
used.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := client.Bridge(cmd.Context(), client.BridgeOptions{File: args[0], In: a.In, Out: a.Out, Logger: a.log})
			if err == nil || errors.Is(err, context.Canceled) {
				return nil
			}
			a.log.Debug("bridge ended", "err", err)
			// 1, as the help says: the reason went to the CLI, as a
			// JSON-RPC error.
			return withExitCode(ExitNo, nil)
		},
	}
}
