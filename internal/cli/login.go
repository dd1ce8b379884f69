package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/apikey"
	"github.com/gemkit/gemkit/internal/term"
)

// modelGetenv is getenv as the model reads its keys: GEMINI_API_KEY
// from the environment, else from the key `gemkit login` stored.
func (a *app) modelGetenv() func(string) string {
	return apikey.UserGetenv(a.getenv, func(err error) { a.log.Warn(err.Error()) })
}

// newLoginCmd is `gemkit login`, the sign-in an ACP client runs in a
// terminal (the Terminal Auth method gemkit acp offers: its launch
// command with the argument login, `gemkit login` or `gemkit acp login`).
func newLoginCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "login",
		Short: "Store a Gemini API key for gemkit's agent (run, chat, acp)",
		Long: `Login asks for a Gemini API key (https://aistudio.google.com/apikey) and
stores it, 0600, in gemini-api-key beside gemkit's config file. gemkit's agent
uses it when neither GEMINI_API_KEY nor GOOGLE_API_KEY is set. On a terminal
the key is not echoed; otherwise it is read as the first line of standard
input. An ACP editor runs this command for its "Sign in" (Terminal Auth).`,
		Args: argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := apikey.Dir()
			if err != nil {
				return err
			}
			fmt.Fprint(a.Err, "Gemini API key (from https://aistudio.google.com/apikey): ")
			key, err := term.ReadSecret(a.In)
			fmt.Fprintln(a.Err)
			if err != nil {
				return err
			}
			if err := apikey.Save(dir, key); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "Stored the key in %s (only you can read it).\n", apikey.Path(dir))
			if a.getenv("GEMINI_API_KEY") != "" || a.getenv("GOOGLE_API_KEY") != "" {
				fmt.Fprintln(a.Out, "GEMINI_API_KEY or GOOGLE_API_KEY is set here, and is used before the stored key.")
			}
			return nil
		},
	}
}

// newLogoutCmd is `gemkit logout`: the stored key removed.
func newLogoutCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Remove the Gemini API key gemkit login stored",
		Args:  argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := apikey.Dir()
			if err != nil {
				return err
			}
			had, err := apikey.Remove(dir)
			if err != nil {
				return err
			}
			if had {
				fmt.Fprintf(a.Out, "Removed the stored key %s.\n", apikey.Path(dir))
			} else {
				fmt.Fprintf(a.Out, "No key was stored (%s).\n", apikey.Path(dir))
			}
			if a.getenv("GEMINI_API_KEY") != "" || a.getenv("GOOGLE_API_KEY") != "" {
				fmt.Fprintln(a.Out, "GEMINI_API_KEY or GOOGLE_API_KEY is still set in this environment, and gemkit uses it.")
			}
			return nil
		},
	}
}
