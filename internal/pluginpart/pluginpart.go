// Package pluginpart runs an LSP server or a monitor of a Claude Code
// plugin switched to gemkit, in gemkit's sandbox. The switch makes of
// the plugin a twin extension (a copy of the plugin's folder as the
// person agreed to it, in gemkit's plugin home) and a twin plugin that
// Claude Code loads, whose .lsp.json and monitors/monitors.json run
// `gemkit plugins part --home TH EXT lsp|monitor NAME` in place of the
// author's commands. That command reads the part from the twin
// extension's copy (internal/claudeplugin.ReadPart), replaces Claude
// Code's variables as Claude Code 2.1.330 does, and starts it in the
// profile of the extension's MCP servers (extmcp.BuildProfile): it
// reads the workspace and its folder, writes its data folder, reaches
// no network but the hosts allowed, and is in a PID namespace of its
// own. Its stdin, stdout and stderr are the command's, so Claude Code
// speaks LSP with the server, or reads the monitor's lines, as it would
// with the author's process. It starts only while the person's consent
// to the extension as it is now holds, checked as the sandbox is set
// up (sandbox.Command.Gate), as for the extension's MCP servers.
package pluginpart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/gemkit/gemkit/internal/claudeplugin"
	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// Run is one start of a part.
type Run struct {
	// Store is the plugin home's extension store; In the twin extension.
	Store *extension.Store
	In    *extension.Installed
	// Kind is claudeplugin.KindLSP or KindMonitor, Name the part's.
	Kind, Name string
	// Workspace is the session's folder (the part's working folder),
	// Environ the environment Claude Code gave gemkit, of which the
	// part gets none but what the profile takes (PATH, HOME's place).
	Workspace string
	Environ   []string
}

// Start checks that the extension is switched and reads its part, then
// starts it in the sandbox with l, its stdio stdin, stdout and stderr;
// the part's command runs only once consent holds. Wait waits for it.
func (r *Run) Start(ctx context.Context, l *sandbox.Launcher, stdin io.Reader, stdout, stderr io.Writer) (*Started, error) {
	ext := r.In.Extension
	if ext == nil {
		return nil, fmt.Errorf("the extension %s cannot be read: %v", extension.Printable(r.In.Name), r.In.Err)
	}
	name := ext.Manifest.Name
	c, err := r.Store.ServerChoice(name)
	if err != nil {
		return nil, err
	}
	if !c.Switched {
		return nil, fmt.Errorf("%s is not switched to gemkit, so gemkit does not run its parts; gemkit plugins sandbox switches the plugin it was made of", extension.Printable(name))
	}
	part, err := claudeplugin.ReadPart(ext.Dir, r.Kind, r.Name)
	if err != nil {
		return nil, err
	}
	env := envmap.Of(r.Environ)
	dataRoot, err := extmcp.DataRoot(env)
	if err != nil {
		return nil, err
	}
	sp, err := r.spec(part, ext, filepath.Join(dataRoot, name))
	if err != nil {
		return nil, err
	}
	sp.Widening = c.Widening
	folders, err := extension.EnvFolders(env)
	if err != nil {
		return nil, fmt.Errorf("listing the extensions, whose folders it must find read-only: %w", err)
	}
	pr, err := extmcp.BuildProfile(sp, r.Workspace, dataRoot, r.Environ, folders)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(pr.Data, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gemkit-plugin-part-")
	if err != nil {
		return nil, err
	}
	cmd := &sandbox.Command{Policy: pr.Policy(r.Workspace, tmp), Path: pr.Path, Args: sp.Args, Dir: r.Workspace,
		Env: append(pr.Env, "TMPDIR="+tmp), Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Gate: func(context.Context) error { return r.consent(ext, env["HOME"]) }}
	p, err := l.Start(ctx, cmd)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &Started{p: p, tmp: tmp}, nil
}

// consent says why ext's parts may not start now: the person must have
// agreed to it as it is now, as for its MCP servers (extmcp.NotServed).
func (r *Run) consent(ext *extension.Extension, home string) error {
	st := extmcp.Policy{Store: r.Store, Home: home}.WithWritable()
	state, err := st.Consent(ext)
	if err != nil {
		return fmt.Errorf("consent to %s cannot be checked: %w", extension.Printable(ext.Manifest.Name), err)
	}
	return extmcp.NotServed(state, ext.Manifest.Name, extmcp.CopiedLinks(st, ext, state))
}

// Started is a part started.
type Started struct {
	p   *sandbox.Process
	tmp string
}

// Wait waits for the part to end and says its exit code.
func (s *Started) Wait() (int, error) {
	defer os.RemoveAll(s.tmp)
	err := s.p.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), nil
	}
	return 1, err
}

// Kill stops the part.
func (s *Started) Kill() { s.p.Kill() }

// spec is the server spec of part of ext, whose data folder is data:
// Claude Code's variables replaced, a monitor's command line run by sh
// as Claude Code runs it through a shell.
func (r *Run) spec(part claudeplugin.Part, ext *extension.Extension, data string) (extmcp.Spec, error) {
	vars := map[string]string{"CLAUDE_PLUGIN_ROOT": ext.Dir, "CLAUDE_PLUGIN_DATA": data, "CLAUDE_PROJECT_DIR": r.Workspace}
	sp := extmcp.Spec{Extension: ext.Manifest.Name, Server: r.Kind + " " + r.Name, Dir: ext.Dir, Env: map[string]string{}}
	var err error
	x := func(s string) string {
		out, e := Expand(s, vars)
		if err == nil {
			err = e
		}
		return out
	}
	if part.Kind == claudeplugin.KindMonitor {
		sp.Command, sp.Args = "sh", []string{"-c", x(part.Command)}
	} else {
		sp.Command = x(part.Command)
		for _, a := range part.Args {
			sp.Args = append(sp.Args, x(a))
		}
		for k, v := range part.Env {
			sp.Env[k] = x(v)
		}
	}
	for k, v := range vars {
		sp.Env[k] = v
	}
	if err != nil {
		return extmcp.Spec{}, fmt.Errorf("%s %s of %s: %w", r.Kind, r.Name, extension.Printable(ext.Manifest.Name), err)
	}
	return sp, nil
}

// varRef is a ${...} reference in a part's command line, arguments or
// env.
var varRef = regexp.MustCompile(`\$\{[^}]*\}`)

// Expand is s with Claude Code's variables of a plugin's part replaced
// by their values in vars (${CLAUDE_PLUGIN_ROOT}, ${CLAUDE_PLUGIN_DATA},
// ${CLAUDE_PROJECT_DIR}, which Claude Code 2.1.330 replaces in a
// monitor's command and an LSP server's: its schema's "${CLAUDE_PLUGIN_
// ROOT}, ${CLAUDE_PLUGIN_DATA}, ${CLAUDE_PROJECT_DIR}, ${user_config.*},
// and ${ENV_VAR} are substituted"). Any other ${...} is an error naming
// it: ${user_config.*} is a value the person gave Claude Code, and
// ${ENV_VAR} one of the person's environment, which a sandboxed part is
// not given; gemkit does not guess either.
func Expand(s string, vars map[string]string) (string, error) {
	var bad []string
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := vars[ref[2:len(ref)-1]]; ok {
			return v
		}
		bad = append(bad, ref)
		return ref
	})
	if len(bad) > 0 {
		return "", fmt.Errorf("it names %s, which gemkit does not fill in for a part it runs in its sandbox (only ${CLAUDE_PLUGIN_ROOT}, ${CLAUDE_PLUGIN_DATA} and ${CLAUDE_PROJECT_DIR})", strings.Join(bad, ", "))
	}
	return out, nil
}

// Short and Long are gemkit plugins part's words.
const (
	Short = "Run a switched plugin's LSP server or monitor in gemkit's sandbox (Claude Code runs this)"
	Long  = `Start the LSP server or monitor NAME of EXT, the twin extension of a Claude
Code plugin switched to gemkit (gemkit plugins sandbox), in gemkit's sandbox.
Claude Code runs this: the twin plugin's .lsp.json and monitors/monitors.json
name it in place of the plugin's own commands.

The part is read from the twin extension's folder in the plugin home --home
(the plugin's files as you agreed to them), with ${CLAUDE_PLUGIN_ROOT} (that
folder), ${CLAUDE_PLUGIN_DATA} (the extension's data folder) and
${CLAUDE_PROJECT_DIR} replaced as Claude Code replaces them; it runs in the
profile of the extension's MCP servers (it reads the workspace and its folder,
writes its data folder, reaches no network but the hosts you allowed), with
this command's stdin, stdout and stderr, in its working folder (the session's,
as Claude Code starts it). It runs nothing, and exits 1 saying
why, when the extension is not switched, has no such part, names another
variable, or your consent to it as it is now does not hold.`
)

// Main runs the part until it ends, or until ctx ends or gemkit is
// stopped (SIGTERM, an interrupt), which stop it: its exit code, or 1
// and why it did not start. opened is the error of opening r's Store
// and In, if any. The workspace is the Store's when r has none.
func (r *Run) Main(ctx context.Context, opened error, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if opened != nil {
		return 1, opened
	}
	if r.Workspace == "" {
		r.Workspace = r.Store.Workspace()
	}
	if r.Kind != claudeplugin.KindLSP && r.Kind != claudeplugin.KindMonitor {
		return 1, fmt.Errorf("%q is no kind of part: %s or %s", r.Kind, claudeplugin.KindLSP, claudeplugin.KindMonitor)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	p, err := r.Start(ctx, &sandbox.Launcher{}, stdin, stdout, stderr)
	if err != nil {
		return 1, fmt.Errorf("gemkit did not start the %s %s of %s: %w", r.Kind, r.Name, extension.Printable(r.In.Name), err)
	}
	defer context.AfterFunc(ctx, p.Kill)()
	return p.Wait()
}
