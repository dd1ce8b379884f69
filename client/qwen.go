package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/shell"
)

// Qwen Code (@qwen-code/qwen-code 0.24.4) runs Gemini CLI's IdeClient with
// its own discovery: lock files in its home folder, its own variables and
// host rule, and fallbacks Gemini CLI does not have (IdeClient.connect,
// getConnectionConfigFromFile, tryFallbackPorts and establishHttpConnection
// in its packages/core/src/ide/ide-client.ts). [Options.Agent] [AgentQwen]
// makes [Discover], [Connect], [Inspect] and [Doctor] follow it.

// The CLIs a client can stand in for ([Options.Agent]).
const (
	AgentGemini = "gemini"
	AgentQwen   = "qwen"
)

// ErrQwenUnsupportedEnvironment is Qwen Code's refusal when it cannot tell
// which editor it runs in: no lock file with ideInfo, and a terminal other
// than VS Code's. Its text is Qwen Code's own.
var ErrQwenUnsupportedEnvironment = errors.New("IDE integration is not supported in your current environment. To use this feature, run Qwen Code in one of these supported IDEs: VS Code or VS Code forks")

// ErrQwenWorkspaceRejected is what Qwen Code says when it found companions
// only for other folders.
var ErrQwenWorkspaceRejected = errors.New("Found IDE companion extension, but its workspace does not match the current directory. Run Qwen Code from the workspace open in your IDE, or switch the IDE to this project.")

// qwenContainerHost is the host Qwen Code tries after 127.0.0.1 inside a
// container, when the name resolves.
const qwenContainerHost = "host.docker.internal"

// DetectQwenIDE decides which editor Qwen Code believes it runs in
// (detectIde of its packages/core/src/ide/detect-ide.ts): ideInfo with both
// names from the lock file; else, only in VS Code's terminal
// (TERM_PROGRAM=vscode), the editor its environment names; nil means Qwen
// Code refuses to connect.
func DetectQwenIDE(fromFile *ide.IDEInfo, ideCommand string, getenv func(string) string) *ide.IDEInfo {
	if fromFile != nil && fromFile.Name != "" && fromFile.DisplayName != "" {
		info := *fromFile
		return &info
	}
	if getenv("TERM_PROGRAM") != "vscode" {
		return nil
	}
	info := ideVSCode
	switch {
	case getenv("__COG_BASHRC_SOURCED") != "":
		info = ide.IDEInfo{Name: "devin", DisplayName: "Devin"}
	case getenv("REPLIT_USER") != "":
		info = ide.IDEInfo{Name: "replit", DisplayName: "Replit"}
	case getenv("CURSOR_TRACE_ID") != "":
		info = ide.IDEInfo{Name: "cursor", DisplayName: "Cursor"}
	case getenv("CODESPACES") != "":
		info = ide.IDEInfo{Name: "codespaces", DisplayName: "GitHub Codespaces"}
	case getenv("EDITOR_IN_CLOUD_SHELL") != "" || getenv("CLOUD_SHELL") != "":
		info = ide.IDEInfo{Name: "cloudshell", DisplayName: "Cloud Shell"}
	case getenv("TERM_PRODUCT") == "Trae":
		info = ide.IDEInfo{Name: "trae", DisplayName: "Trae"}
	case getenv("MONOSPACE_ENV") != "":
		info = ide.IDEInfo{Name: "firebasestudio", DisplayName: "Firebase Studio"}
	case ideCommand == "" || !strings.Contains(strings.ToLower(ideCommand), "code"):
		info = ideVSCodeFork
	}
	return &info
}

// discoverQwen is Discover for Qwen Code.
func discoverQwen(ctx context.Context, o Options, p *Plan) *Plan {
	p.Agent = AgentQwen
	// Qwen Code has no editor-pid variable: only --ide-pid skips the walk.
	getenv := func(k string) string {
		if k == ide.EnvPID {
			if o.IDEPID > 0 {
				return strconv.Itoa(o.IDEPID)
			}
			return ""
		}
		return o.Getenv(k)
	}
	p.Process = discovery.FindIDEProcess(ctx, discovery.FindOptions{Getenv: getenv, Lookup: o.Lookup})
	tmp := o.Getenv("TMPDIR")
	if tmp == "" {
		tmp = os.TempDir()
	}
	dir := o.Dir
	if dir == "" {
		home := o.Getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = discovery.QwenLockDir(o.Getenv, home)
	}
	p.QwenChoice, p.ChoiceErr = discovery.ChooseQwen(discovery.QwenChooseOptions{Dir: dir, TempDir: tmp, IDEPID: p.Process.PID, Cwd: o.Cwd, Getenv: o.Getenv})
	ch := p.QwenChoice
	if ch != nil && ch.Chosen != nil {
		p.Contents = ch.Chosen.Contents
	}
	// No token variable: the lock file's or none.
	p.readContents(o, DetectQwenIDE, "", ide.EnvQwenWorkspacePath)
	p.Workspace = discovery.ValidateQwenWorkspace(p.WorkspacePath, o.Cwd)

	hosts := []string{"127.0.0.1"}
	if o.Host != "" {
		hosts = []string{o.Host}
	} else if o.InContainer() && resolves(ctx, qwenContainerHost) {
		hosts = append(hosts, qwenContainerHost)
	}
	httpEndpoints := func(source EndpointSource, port int, portText, token string) {
		for _, h := range hosts {
			p.Endpoints = append(p.Endpoints, Endpoint{Transport: TransportHTTP, Source: source, Host: h, Port: port, PortText: portText, Token: token})
		}
	}
	if c := p.Contents; c != nil {
		if c.Port != 0 {
			httpEndpoints("file", c.Port, c.PortText, p.AuthToken)
			// The other lock files: those for this folder first, then
			// those without a workspace, each with its own token.
			var match, other []*discovery.QwenCandidate
			for _, f := range ch.Candidates {
				if f.Contents == nil || f.Stale != "" || f.Contents.Port == 0 || f.Contents.Port == c.Port {
					continue
				}
				switch {
				case f.Contents.WorkspacePath == nil:
					other = append(other, f)
				case discovery.ValidateQwenWorkspace(f.Contents.WorkspacePath, o.Cwd) == nil:
					match = append(match, f)
				}
			}
			token := p.AuthToken
			for _, f := range append(match, other...) {
				if f.Contents.AuthToken != nil {
					token = *f.Contents.AuthToken
				}
				httpEndpoints("fallback", f.Contents.Port, f.Contents.PortText, token)
			}
		}
		if c.Stdio != nil {
			p.Endpoints = append(p.Endpoints, Endpoint{Transport: TransportStdio, Source: FromFile, Command: c.Stdio.Command, Args: c.Stdio.Args})
		}
	}
	if port := discovery.QwenEnvPort(o.Getenv); port != "" {
		n, _ := strconv.Atoi(port)
		if ch == nil || !slices.Contains(ch.Rejected, n) {
			httpEndpoints("env", n, port, p.AuthToken)
		}
	}
	if cmd := o.Getenv(ide.EnvQwenServerStdioCmd); cmd != "" {
		ep := Endpoint{Transport: TransportStdio, Source: FromEnv, Command: cmd, Args: []string{}}
		var args []string
		if a := o.Getenv(ide.EnvQwenServerStdioArgs); a != "" && json.Unmarshal([]byte(a), &args) == nil {
			ep.Args = args
		}
		p.Endpoints = append(p.Endpoints, ep)
	}
	return p
}

// resolves reports whether name resolves within Qwen Code's 3 s
// (isHostResolvable).
func resolves(ctx context.Context, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	return err == nil && len(addrs) > 0
}

// qwenConnectError is Qwen Code's last word when no endpoint connected.
func qwenConnectError(p *Plan) *ConnectError {
	if p.QwenChoice != nil && len(p.QwenChoice.Rejected) > 0 {
		return refusal(ErrQwenWorkspaceRejected)
	}
	return &ConnectError{Message: "Failed to connect to IDE companion extension in " + p.IDE.DisplayName + ". Please ensure the extension is running. To install the extension, run /ide install."}
}

// qwenSettings is what gemkit reads of Qwen Code's user settings.
type qwenSettings struct {
	IDE struct {
		Enabled *bool `json:"enabled"`
	} `json:"ide"`
	Tools struct {
		ApprovalMode string `json:"approvalMode"`
	} `json:"tools"`
}

// readQwenSettings reads Qwen Code's user settings ($QWEN_HOME/settings.json,
// else ~/.qwen/settings.json); an absent file reads as empty settings, err
// is set when it is there but cannot be read as JSON.
func readQwenSettings(getenv func(string) string, home string) (s qwenSettings, path string, err error) {
	path = filepath.Join(filepath.Dir(discovery.QwenLockDir(getenv, home)), "settings.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, path, nil
	}
	if err != nil {
		return s, path, err
	}
	return s, path, json.Unmarshal(b, &s)
}

// QwenIDEEnabled reads ide.enabled from Qwen Code's user settings
// ($QWEN_HOME/settings.json, else ~/.qwen/settings.json); a file that is
// absent reads as off, as Qwen Code takes it (settings.ide?.enabled ??
// false). known is false when the file cannot be read as JSON.
func QwenIDEEnabled(getenv func(string) string, home string) (enabled, known bool, path string) {
	s, path, err := readQwenSettings(getenv, home)
	if err != nil {
		return false, false, path
	}
	return s.IDE.Enabled != nil && *s.IDE.Enabled, true, path
}

// QwenApprovalMode is the approval mode Qwen Code (0.24.4) starts in by its
// user settings: tools.approvalMode, else "auto", its default (an LLM
// classifier approves each edit, so none is shown as a diff);
// known is false when the settings cannot be read as JSON. A trusted
// folder's own settings, or --approval-mode, can still change it.
func QwenApprovalMode(getenv func(string) string, home string) (mode string, known bool, path string) {
	s, path, err := readQwenSettings(getenv, home)
	if err != nil {
		return "", false, path
	}
	if s.Tools.ApprovalMode == "" {
		return "auto", true, path
	}
	return s.Tools.ApprovalMode, true, path
}

// doctorQwen is Doctor for Qwen Code: its settings, its lock files, the
// editor it would see, its variables and the connection.
func doctorQwen(ctx context.Context, d *DoctorReport, o Options, add addFinding) {
	st, p := d.Status, d.Status.Plan
	home := o.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if on, known, path := QwenIDEEnabled(o.Getenv, home); known && !on {
		add(path, "warning", "IDE mode is off in Qwen Code's settings, so it looks for no companion",
			"type /ide enable in Qwen Code (it writes ide.enabled: true there), or set it yourself; Qwen Code also turns IDE mode off while its sandbox is on")
	}
	if mode, known, path := QwenApprovalMode(o.Getenv, home); known && mode != "default" && mode != "plan" {
		add(path, "warning", fmt.Sprintf("Qwen Code starts in approval mode %q, so it applies its edits without asking and none opens as a diff in the editor", mode),
			"type /approval-mode default in Qwen Code (for that session), or set \"tools\": {\"approvalMode\": \"default\"} there for every session")
	}
	ch := p.QwenChoice
	if ch != nil {
		for _, c := range ch.Files() {
			doctorQwenFile(ctx, c, c == ch.Chosen, p, add)
		}
	}
	if p.Contents == nil && len(p.Endpoints) == 0 {
		const fix = "start the companion in your editor (gemkit ide serve and gemkit's plugins write a Qwen Code lock file unless --qwen=false); the editor and Qwen Code must run as the same user with the same HOME (or QWEN_HOME)"
		switch {
		case ch == nil || len(ch.Files()) == 0:
			add(st.Dir, "error", "no companion has announced itself to Qwen Code: no lock file in "+st.Dir, fix)
		case len(ch.Rejected) > 0:
			add(st.Dir, "error", fmt.Sprintf("no companion's workspace holds %s, so Qwen Code uses no lock file and, with no editor named, says it does not support this environment", p.Cwd),
				"run Qwen Code from one of the editor's folders named above, or open this folder in the editor")
		default:
			add(st.Dir, "error", fmt.Sprintf("no lock file Qwen Code would use from %s (see above)", p.Cwd), fix)
		}
	}
	if p.Contents != nil && p.IDE == nil {
		add(ch.Chosen.Name, "error", "the file has no ideInfo and TERM_PROGRAM is not vscode, so Qwen Code refuses to connect: \""+ErrQwenUnsupportedEnvironment.Error()+"\"",
			"make the companion write ideInfo {name, displayName} in its lock file")
	}
	if v := o.Getenv(ide.EnvQwenServerPort); v != "" {
		switch port := discovery.QwenEnvPort(o.Getenv); {
		case port == "":
			add(ide.EnvQwenServerPort, "warning", fmt.Sprintf("%q is not a port; Qwen Code ignores it", v), "unset it")
		case ch == nil || ch.EnvLock == nil:
			add(ide.EnvQwenServerPort, "warning", fmt.Sprintf("no lock file %s.lock in %s: this terminal was probably opened by an editor whose companion has since restarted", port, st.Dir), "open a new terminal in the editor, or unset it")
		}
	}
	d.connection("Qwen Code", "started here it says", add)
}

func doctorQwenFile(ctx context.Context, c *discovery.QwenCandidate, chosen bool, p *Plan, add addFinding) {
	name := c.Name
	switch {
	case c.Err != nil:
		add(name, "warning", "Qwen Code cannot read it and skips it: "+c.Err.Error(), "delete it if no companion uses it: rm "+shell.Quote(c.Path))
		return
	case c.Stale != "":
		add(name, "warning", "Qwen Code deletes this file the next time it looks: "+c.Stale, "")
		return
	}
	if c.Mode&0o077 != 0 {
		add(name, "warning", fmt.Sprintf("mode %04o lets other users read its token", c.Mode), "chmod 600 "+shell.Quote(c.Path)+" (and fix the companion to write it 0600)")
	}
	if c.Legacy() {
		add(name, "warning", "legacy file in "+filepath.Dir(c.Path)+"; Qwen Code reads it before its lock folder", "update the companion to write <port>.lock in Qwen Code's ide folder")
	}
	var mm *discovery.MismatchError
	switch {
	case c.Contents.WorkspacePath == nil && c.Source == discovery.QwenScanned:
		add(name, "warning", "the file has no workspacePath, so Qwen Code's scan skips it (it is still tried when another file's port fails)", "update the companion")
	case errors.As(c.Workspace, &mm):
		add(name, "warning", "the current directory "+p.Cwd+" is outside this editor's workspace", "run Qwen Code from one of: "+strings.Join(mm.Folders, ", ")+" (or open this folder in the editor)")
	}
	if !chosen || c.Contents.Port == 0 {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Contents.Port)))
	if err != nil {
		fix := "restart the companion in that editor"
		if c.Contents.Stdio != nil {
			fix += " (Qwen Code still tries the file's stdio command)"
		}
		add(name, "error", fmt.Sprintf("port %d is closed on 127.0.0.1: the companion that wrote this file no longer serves", c.Contents.Port), fix)
		return
	}
	conn.Close()
	add(name, "ok", fmt.Sprintf("%s: something answers on port %d", p.QwenChoice.Reason, c.Contents.Port), "")
}
