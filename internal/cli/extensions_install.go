package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/extswitch"
	"github.com/gemkit/gemkit/internal/extview"
)

func newExtInstallCmd(a *app) *cobra.Command {
	var ref, subdir string
	var consent, asJSON, autoUpdate, preRelease, skipSettings bool
	cmd := &cobra.Command{
		Use:   "install <git-url|local-folder>",
		Short: "Install an extension from a git repository or a local folder",
		Long: `Install an extension into ~/.gemini/extensions/<name>/, where Gemini CLI finds it too.

A git source is cloned with your own git (https, ssh, git@host:path and file URLs),
at --ref (a branch, tag or commit) when given; a repository on disk is a file://
URL, since a path is copied as a folder. --path names the folder inside the
source that holds gemini-extension.json. The manifest must be valid. You are shown
what the extension will be able to do and asked to agree, unless --consent is given;
without a terminal and without --consent the install is refused after showing it.
A failed install leaves nothing behind.

Gemini CLI's own install flags: --auto-update and --pre-release are recorded
in the install metadata, where Gemini CLI reads them and acts on them (it
updates the extension by itself, and takes pre-release versions); gemkit
itself updates only on ` + "`gemkit extensions update`" + `. --skip-settings is
accepted and changes nothing: gemkit never asks for settings at install;
` + "`gemkit extensions describe`" + ` shows which are unset, and Gemini CLI's
` + "`gemini extensions config NAME`" + ` sets them (gemkit reads what it writes to
the extension's .env).`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			st = withWritable(a, st)
			interactive := isTerminal(a.In)
			in, err := st.Install(cmd.Context(), extension.InstallRequest{
				Source: args[0], Ref: ref, Subdir: subdir,
				Consent: consentFunc(a, consent), Progress: a.Err, Interactive: interactive,
				AutoUpdate: autoUpdate, AllowPreRelease: preRelease,
			})
			if err != nil {
				return withInstallFlag(err)
			}
			keepAgreed(cmd.Context(), a, st, in.Extension)
			if asJSON {
				return writeJSON(a.Out, extview.Entry(st, in, nil))
			}
			m := in.Manifest()
			fmt.Fprintf(printableWriter{a.Out}, "Installed %s %s in %s\n", m.Name, m.Version, in.Entry)
			tellToolsStopped(a.Err, in)
			return nil
		},
	}
	cmd.Flags().StringVar(&ref, "ref", "", "git branch, tag or commit to install")
	cmd.Flags().StringVar(&subdir, "path", "", "folder inside the source that holds gemini-extension.json")
	cmd.Flags().BoolVar(&consent, "consent", false, "agree to the extension's permissions without being asked")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the installed extension as JSON")
	cmd.Flags().BoolVar(&autoUpdate, "auto-update", false, "record that Gemini CLI may update this extension by itself (gemkit updates only when asked)")
	cmd.Flags().BoolVar(&preRelease, "pre-release", false, "record that Gemini CLI may install pre-release versions of it")
	cmd.Flags().BoolVar(&skipSettings, "skip-settings", false, "accepted for Gemini CLI's sake; gemkit never asks for settings at install")
	return cmd
}

// withInstallFlag adds to a refused install request the flag that set
// the field it names.
func withInstallFlag(err error) error {
	var re *extension.RequestError
	if !errors.As(err, &re) {
		return err
	}
	switch re.Field {
	case "Subdir":
		return fmt.Errorf("%w (--path)", err)
	case "Ref":
		return fmt.Errorf("%w (--ref)", err)
	}
	return err
}

// tellToolsStopped says, after an install, link or update, what of the
// extension gemkit does not run (extview.WriteStopped).
func tellToolsStopped(w io.Writer, in *extension.Installed) {
	extview.WriteStopped(printableWriter{w}, in)
}

func newExtLinkCmd(a *app) *cobra.Command {
	var consent bool
	cmd := &cobra.Command{
		Use:   "link <folder>",
		Short: "Link a development folder as an installed extension (no copy)",
		Long: `Link a folder you are working on as an installed extension, as Gemini CLI's
"extensions link" does: ~/.gemini/extensions/<name>/ then holds only install
metadata pointing at the folder's real path (symlinks resolved), so your edits take
effect at once and ${extensionPath} is the real path. Consent as for install.`,
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			st = withWritable(a, st)
			in, err := st.Link(cmd.Context(), args[0], consentFunc(a, consent))
			if err != nil {
				return err
			}
			keepAgreed(cmd.Context(), a, st, in.Extension)
			fmt.Fprintf(printableWriter{a.Out}, "Linked %s %s → %s\n", in.Manifest().Name, in.Manifest().Version, in.Extension.Dir)
			tellToolsStopped(a.Err, in)
			return nil
		},
	}
	cmd.Flags().BoolVar(&consent, "consent", false, "agree to the extension's permissions without being asked")
	return cmd
}

func newExtUninstallCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "uninstall <name>...",
		Aliases: []string{"remove", "rm"},
		Short:   "Uninstall extensions",
		Args:    argsUsage(1, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			var failed []string
			for _, name := range args {
				// The records of its switch are under its folder's name;
				// the person may have typed it in other letters, or
				// typed the manifest's name, which Get finds too.
				in, err := st.Get(name)
				if err == nil {
					name = in.Name
				} else if errors.Is(err, extension.ErrNotInstalled) {
					// Gone already (Gemini CLI's own uninstall): what
					// gemkit keeps of it goes.
					removed, ferr := forgetOrphan(a, st, name)
					if ferr != nil {
						fmt.Fprintf(a.Err, "gemkit: %v\n", ferr)
						failed = append(failed, name)
					}
					if removed || ferr != nil {
						continue
					}
				}
				// Its servers go back to Gemini CLI's settings as they
				// were, before the extension goes.
				if err := forgetServers(a, st, name); err != nil {
					fmt.Fprintf(a.Err, "gemkit: %v\n", err)
					failed = append(failed, name)
					continue
				}
				// Its servers' data folder is named by the manifest's
				// name; uninstall takes the folder's.
				data := name
				if in != nil && in.Extension != nil {
					data = in.Extension.Manifest.Name
				}
				if err := st.Uninstall(name); err != nil {
					fmt.Fprintf(a.Err, "gemkit: %v\n", err)
					failed = append(failed, name)
					continue
				}
				fmt.Fprintf(a.Out, "Uninstalled %s\n", name)
				// The packages pinned for its servers go with it.
				removeTrees(a, st, data)
				keptData(a.Out, a.getenv("HOME"), data)
				// What the sandbox refused its servers was the extension's
				// as it was: not told of whatever comes next by its name.
				if err := extswitch.ForgetRefusals(data); err != nil {
					fmt.Fprintf(a.Err, "gemkit: forgetting what the sandbox refused %s's servers: %v\n", name, err)
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("could not uninstall %s", strings.Join(failed, ", "))
			}
			return nil
		},
	}
}

// keptData says that the data folder of the MCP servers of the
// extension name, which uninstalling keeps, holds what they wrote, and
// how to remove it: nothing else tells the person it is there. An empty
// or missing folder is not worth a line.
func keptData(w io.Writer, home, name string) {
	root, err := extmcp.DataRoot(map[string]string{"HOME": home})
	if err != nil {
		return
	}
	dir := filepath.Join(root, name)
	if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
		return
	}
	fmt.Fprintf(printableWriter{w}, "Kept what its MCP servers wrote, in %s: gemkit mcp gives it back to them if you install %s again; to delete it: rm -r %s\n", dir, name, dir)
}
