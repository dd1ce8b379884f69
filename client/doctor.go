package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/shell"
)

// Severity is how much a Finding matters.
type Severity string

// Severities, worst first.
const (
	SeverityError   Severity = "error"   // this breaks the connection
	SeverityWarning Severity = "warning" // worth fixing; the CLI may still connect
	SeverityOK      Severity = "ok"      // a fact: this part works
)

// addFinding adds a Finding to a doctor report.
type addFinding func(subject string, sev Severity, msg, fix string)

// Finding is one problem (or fact) doctor reports, in words a person can
// act on.
type Finding struct {
	// Subject is the file name or environment variable concerned.
	Subject  string   `json:"subject"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	// Fix says what to do, when there is something to do.
	Fix string `json:"fix,omitempty"`
}

// DoctorReport is what `gemkit ide doctor` shows.
type DoctorReport struct {
	Status   *StatusReport `json:"status"`
	Findings []Finding     `json:"findings"`
	// Works is true when the CLI would connect from this directory.
	Works bool `json:"works"`
}

// Doctor examines every discovery file and environment variable and says
// what is wrong, trying each usable file's endpoint itself.
func Doctor(ctx context.Context, o Options) (*DoctorReport, error) {
	o.defaults()
	st, err := Inspect(ctx, o, true)
	if err != nil {
		return nil, err
	}
	d := &DoctorReport{Status: st, Works: st.Connect != nil && st.Connect.OK}
	add := func(subject string, sev Severity, msg, fix string) {
		d.Findings = append(d.Findings, Finding{Subject: subject, Severity: sev, Message: msg, Fix: fix})
	}
	p := st.Plan
	if p.Agent == AgentQwen {
		doctorQwen(ctx, d, o, add)
		return d, nil
	}
	uid := os.Getuid()
	host := o.Host
	if host == "" {
		host = ServerHost(o.Getenv, o.InContainer())
	}
	if host != "127.0.0.1" {
		if p.Contents != nil && p.Contents.Stdio != nil {
			add("container", "ok", fmt.Sprintf("this looks like a container (/.dockerenv or /run/.containerenv), so the CLI dials %s instead of 127.0.0.1; when nothing answers there it starts the discovery file's stdio command (%s), which reaches a companion of this container", host, p.Contents.Stdio.Command), "")
		} else {
			add("container", "warning", fmt.Sprintf("this looks like a container (/.dockerenv or /run/.containerenv), so the CLI dials %s instead of 127.0.0.1", host), containerFix)
		}
	}
	gone := map[*discovery.Candidate]bool{}
	if ch := p.Choice; ch != nil {
		all := ch.Candidates
		if ch.Legacy != nil {
			all = append([]*discovery.Candidate{ch.Legacy}, all...)
		}
		for _, c := range all {
			gone[c] = doctorFile(ctx, c, c == ch.Chosen, p, o, host, uid, add)
		}
	}
	doctorOtherFiles(st, p, add)
	if ch := p.Choice; ch != nil && o.Getenv(ide.EnvServerPort) == "" {
		serving := slices.DeleteFunc(ch.Serving(), func(c *discovery.Candidate) bool { return gone[c] })
		if len(serving) > 1 {
			names := make([]string, len(serving))
			for i, c := range serving {
				names[i] = fmt.Sprintf("%s (pid %d)", c.Name, c.PID)
			}
			add("companions", "warning", fmt.Sprintf("%d companions serve %s: %s; a CLI started here connects to the first by the CLI's order (editor pid, alive, larger pid), whichever you meant",
				len(serving), p.Cwd, strings.Join(names, ", ")),
				"stop the companions you do not use (a second `gemkit ide serve` in one folder is usually a forgotten one), or paste the export line of the one you want before starting gemini")
		}
	}
	if p.Contents == nil && len(p.Endpoints) == 0 {
		// Nothing to connect to: say so first, in place of the real CLI's
		// words for this case (IdeClient.connect in ide-client.ts), which
		// blame the terminal.
		const fix = "start the IDE companion in your editor (the Gemini CLI Companion extension in VS Code, or `gemkit ide serve`); the editor and the CLI must run as the same user with the same TMPDIR"
		switch {
		case errors.Is(p.ChoiceErr, fs.ErrNotExist):
			add(st.Dir, "error", "no companion: the discovery directory does not exist, so no companion has announced itself to this user", fix)
		case st.DirError != "":
			add(st.Dir, "error", "no companion can be found: "+st.DirError, "make the directory readable by this user, or "+fix)
		case len(st.Files) == 0:
			add(st.Dir, "error", "no companion: the discovery directory holds no discovery file the CLI would read", fix)
		default:
			add(st.Dir, "error", fmt.Sprintf("no companion: none of the %d discovery files can be used (see above)", len(st.Files)), fix)
		}
	}
	doctorEnv(p, st.Connect, o, add)
	if p.Contents != nil && (p.Contents.IDEInfo == nil || p.Contents.IDEInfo.Name == "" || p.Contents.IDEInfo.DisplayName == "") {
		if p.IDE == nil {
			term := "TERM_PROGRAM is not set"
			if v := o.Getenv("TERM_PROGRAM"); v != "" {
				term = "TERM_PROGRAM is " + strconv.Quote(v)
			}
			add(p.Choice.Chosen.Name, "error", "the file has no ideInfo and this terminal is not one the real CLI recognises ("+term+"), so the real CLI refuses to connect: \""+ErrUnsupportedEnvironment.Error()+"\"",
				"make the companion write ideInfo {name, displayName} in its discovery file, or run the CLI in a terminal with TERM_PROGRAM=vscode")
		} else {
			add(p.Choice.Chosen.Name, "warning", "the file has no ideInfo; the CLI connects only because TERM_PROGRAM (or a similar variable) names a supported editor", "make the companion write ideInfo {name, displayName}")
		}
	}
	doctorGeminiSettings(p, o, add)
	d.connection("the CLI", "a Gemini CLI started here says", add)
	return d, nil
}

// connection says whether who (the CLI, Qwen Code) connects from the
// plan's directory, and what it lacks when it does, or else what a CLI
// started there says when it fails (in the words of says).
func (d *DoctorReport) connection(who, says string, add addFinding) {
	st, p := d.Status, d.Status.Plan
	if d.Works {
		add("connection", "ok", fmt.Sprintf("%s connects from %s to %s", who, p.Cwd, st.Connect.Endpoint), "")
		if !st.Connect.Diffing {
			// Said already when the connection is the chosen file's.
			if sev, msg, fix := diffingProblem(st.Connect.Tools); !d.says(msg) {
				add("connection", sev, msg, fix)
			}
		}
	} else if st.Connect != nil {
		msg := who + " would not connect from " + p.Cwd + "; " + says + ": \"" + st.Connect.Error + "\""
		// The CLI's words name no cause; each endpoint's own failure
		// does (a bridge's answer, a refused token, a closed port).
		if len(st.Connect.Attempts) > 0 {
			msg += "; it tried " + strings.Join(st.Connect.Attempts, "; then ")
		}
		add("connection", "error", msg, "")
	}
}

// doctorFile says what is wrong with c; gone: its port is closed, so it serves nothing.
func doctorFile(ctx context.Context, c *discovery.Candidate, chosen bool, p *Plan, o Options, host string, uid int, add addFinding) (gone bool) {
	name := c.Name
	var oe *discovery.OwnerError
	switch {
	case errors.As(c.Err, &oe):
		add(name, "warning", fmt.Sprintf("owned by uid %d, not by you (uid %d): the CLI ignores it", oe.Owner, uid), "if this is your editor's companion, it runs as another user (for example under sudo): run the editor and the CLI as the same user")
		return
	case c.Err != nil:
		add(name, "error", "cannot be used: "+c.Err.Error(), "restart the companion so it rewrites the file, or delete "+c.Path)
		return
	}
	doctorFileShape(c, chosen, p, add)
	cfg := c.Contents
	if cfg.Port == 0 && cfg.Stdio == nil {
		add(name, "error", "the file names neither a port nor a stdio command", "restart the companion")
		return
	}
	if cfg.Stdio != nil {
		if _, err := exec.LookPath(cfg.Stdio.Command); err != nil {
			add(name, "error", fmt.Sprintf("its stdio command %q cannot be found: %v", cfg.Stdio.Command, err), "reinstall or restart the companion, or delete the file: rm "+shell.Quote(c.Path))
		}
	}
	if cfg.Port == 0 {
		if !c.Alive {
			add(name, "warning", fmt.Sprintf("pid %d is not running: the editor that wrote this file has probably exited", c.PID), "if its stdio command no longer works, delete it: rm "+shell.Quote(c.Path))
		}
		return
	}
	token := ""
	if cfg.AuthToken != nil {
		token = *cfg.AuthToken
	} else if t, ok := o.LookupEnv(ide.EnvAuthToken); ok {
		token = t
	}
	ep := Endpoint{Transport: TransportHTTP, Source: FromFile, Host: host, Port: cfg.Port, PortText: cfg.PortText, Token: token}
	if cfg.Port < 1 || cfg.Port > 65535 {
		add(name, "error", fmt.Sprintf("port %q is not between 1 and 65535; the CLI will not dial it", cfg.PortText), "restart the companion")
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if stop, stale := doctorPortOpen(dctx, c, host, add); stop {
		return stale
	}
	if !c.Alive && !c.Legacy { // a legacy file is read for its pid whatever the order
		add(name, "warning", fmt.Sprintf("pid %d in the name is not running, yet something answers on port %d: the file is not named after the live editor, so the CLI ranks it after the files of running editors", c.PID, cfg.Port), "make the companion name the file after the editor's pid (gemkit ide serve --ide-pid)")
	}
	return doctorHandshake(dctx, c, ep, o, add)
}

// doctorFileShape reports what the file says of itself before anything
// is dialled: a token others can read, a legacy name, and a workspace
// that does not hold the current directory (an error only for the file
// the CLI would choose).
func doctorFileShape(c *discovery.Candidate, chosen bool, p *Plan, add addFinding) {
	name := c.Name
	if c.Mode&0o077 != 0 {
		add(name, "warning", fmt.Sprintf("mode %04o lets other users read its token", c.Mode), "chmod 600 "+shell.Quote(c.Path)+" (and fix the companion to write it 0600)")
	}
	if c.Legacy {
		add(name, "warning", "legacy file name without a port; the CLI reads it first for this IDE pid", "update the companion")
	}
	var mm *discovery.MismatchError
	switch {
	case c.Workspace == nil:
	case errors.As(c.Workspace, &mm):
		sev := SeverityWarning
		if chosen {
			sev = SeverityError
		}
		add(name, sev, "the current directory "+p.Cwd+" is outside this editor's workspace", "run the CLI from one of: "+strings.Join(mm.Folders, ", ")+" (or open this folder in the editor)")
	case errors.Is(c.Workspace, discovery.ErrEmptyWorkspace):
		add(name, "error", "the editor has no folder open", "open a workspace folder in the editor")
	case errors.Is(c.Workspace, discovery.ErrNoWorkspace):
		add(name, "error", "the file has no workspacePath", "update the companion; "+ide.EnvWorkspacePath+" is the only fallback")
	}
}

// doctorPortOpen dials the file's port once, as the CLI would, and
// reports a port that cannot be resolved or is closed. stop says the
// file's findings are complete; gone says the file is stale or its
// companion stopped.
func doctorPortOpen(dctx context.Context, c *discovery.Candidate, host string, add addFinding) (stop, gone bool) {
	name, cfg := c.Name, c.Contents
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", net.JoinHostPort(host, strconv.Itoa(cfg.Port)))
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr) && cfg.Stdio != nil && !listensLocally(dctx, cfg.Port):
		// gemkit's stdio command (ide bridge) relays to the port on
		// 127.0.0.1, so a port closed there is closed for the CLI too,
		// whatever it dials first: a dead editor's file is stale, a live
		// one's companion was stopped (the terminal front-end's editor is
		// the shell it runs in, which outlives a killed companion).
		if !c.Alive {
			add(name, "error", fmt.Sprintf("stale: pid %d has exited and nothing listens on port %d of this machine, so the file's stdio command has nothing to reach", c.PID, cfg.Port), "delete it: rm "+shell.Quote(c.Path))
			return true, true
		}
		add(name, "error", fmt.Sprintf("port %d is closed on 127.0.0.1, where the file's stdio command relays: the companion of pid %d no longer serves", cfg.Port, c.PID), restartFix(c.Path))
		return true, true
	case errors.As(err, &dnsErr) && cfg.Stdio != nil:
		add(name, "ok", fmt.Sprintf("%s cannot be resolved, so the CLI cannot dial port %d; it then starts the file's stdio command", host, cfg.Port), "")
		return true, false
	case errors.As(err, &dnsErr):
		add(name, "error", fmt.Sprintf("%s cannot be resolved, so port %d cannot be dialled", host, cfg.Port), containerFix)
		return true, false
	case err != nil && !c.Alive:
		add(name, "error", fmt.Sprintf("stale: pid %d has exited and nothing listens on port %d", c.PID, cfg.Port), "delete it: rm "+shell.Quote(c.Path))
		return true, true
	case err != nil:
		add(name, "error", fmt.Sprintf("port %d is closed on %s: the companion of pid %d no longer serves", cfg.Port, host, c.PID), restartFix(c.Path))
		return true, true
	}
	conn.Close()
	return false, false
}

// doctorHandshake connects as the CLI does and reports a refused token,
// a refused Host or Origin, or a companion that cannot show diffs.
func doctorHandshake(dctx context.Context, c *discovery.Candidate, ep Endpoint, o Options, add addFinding) (gone bool) {
	name, cfg := c.Name, c.Contents
	cl, err := Dial(dctx, ep, o)
	if err != nil {
		var de *DialError
		switch {
		case errors.As(err, &de) && de.Kind == "unauthorized":
			fix := "the token in the file does not match the running companion: restart the companion so it rewrites the file"
			if cfg.AuthToken == nil {
				fix = "the file has no authToken and " + ide.EnvAuthToken + " does not match: restart the companion"
			}
			add(name, "error", "the companion refused the token (HTTP 401)", fix)
		case errors.As(err, &de) && de.Kind == "forbidden":
			add(name, "error", "the companion refused the request (HTTP 403, its Host or Origin check)", "check that nothing rewrites the Host header between the CLI and the companion (a proxy)")
		default:
			add(name, "error", "connecting failed: "+err.Error(), "restart the companion")
		}
		return
	}
	defer cl.Close(context.Background())
	if !cl.DiffingEnabled() {
		var names []string
		for _, t := range cl.Tools() {
			names = append(names, t.Name)
		}
		sev, msg, fix := diffingProblem(names)
		add(name, sev, msg, fix)
		return
	}
	srv := cl.Server()
	add(name, "ok", fmt.Sprintf("%s %s answers on port %d with openDiff and closeDiff", srv.Name, srv.Version, cfg.Port), "")
	return false
}

// containerFix is what to do when a CLI in a container dials
// host.docker.internal and the discovery file names no stdio command to
// fall back on.
const containerFix = "if the companion runs in this same container, set REMOTE_CONTAINERS=true in the CLI's shell (`export REMOTE_CONTAINERS=true`; the terminals of gemkit's editor plugins have it already) so that the CLI dials 127.0.0.1, or use a companion whose discovery file names a stdio command (gemkit ide serve's names `gemkit ide bridge`, which needs no step)"

// restartFix is what to do about the discovery file at path of a
// companion that no longer serves while the process the file is named
// after runs (an editor, or the shell of a terminal companion): the CLI
// still ranks it first, so it hides every other companion until it is
// gone.
func restartFix(path string) string {
	return "start the companion again (gemkit ide serve in that terminal, or restart it in that editor; close the editor if it is stuck), or delete the file it left so that the CLI picks another: rm " + shell.Quote(path)
}

// listensLocally reports whether something accepts connections on port
// of 127.0.0.1, where gemkit's stdio bridge relays.
func listensLocally(ctx context.Context, port int) bool {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// doctorOtherFiles names the files that look like discovery files but
// that the CLI never reads from here.
func doctorOtherFiles(st *StatusReport, p *Plan, add addFinding) {
	if st.Dir == "" {
		return
	}
	ents, err := os.ReadDir(st.Dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, ide.DiscoveryFilePrefix) {
			continue
		}
		if _, _, ok := discovery.ParseFileName(name); ok || name == discovery.LegacyFileName(p.Process.PID) {
			continue
		}
		rest := strings.TrimSuffix(strings.TrimPrefix(name, ide.DiscoveryFilePrefix), ide.DiscoveryFileSuffix)
		if _, err := strconv.Atoi(rest); err == nil && strings.HasSuffix(name, ide.DiscoveryFileSuffix) {
			add(name, "warning", "legacy file name: the CLI reads it only when the editor's pid is "+rest+" (here it is "+strconv.Itoa(p.Process.PID)+")", "update the companion to write gemini-ide-server-<pid>-<port>.json")
			continue
		}
		add(name, "warning", "the CLI never reads this file: its name does not match gemini-ide-server-<pid>-<port>.json", "if a companion wrote it, fix the name it writes")
	}
}

func doctorEnv(p *Plan, conn *ConnectStatus, o Options, add addFinding) {
	if v := o.Getenv(ide.EnvPID); v != "" {
		if n, ok := discovery.ParseJSInt(v); !ok || n <= 0 {
			add(ide.EnvPID, "warning", fmt.Sprintf("%q is not a positive integer, so the CLI walks the process tree instead", v), "unset it or set it to the editor's pid")
		} else if !discovery.PIDAlive(n) {
			add(ide.EnvPID, "warning", fmt.Sprintf("pid %d is not running", n), "unset it, or paste the export line the companion prints now (`gemkit ide serve`), which names the running editor's pid")
		}
	}
	if v := o.Getenv(ide.EnvServerPort); v != "" {
		n, ok := discovery.ParseJSInt(v)
		if !ok || n < 1 || n > 65535 {
			add(ide.EnvServerPort, "warning", fmt.Sprintf("%q is not a port; the CLI ignores it", v), "unset it")
		} else {
			found := false
			if p.Choice != nil {
				for _, c := range p.Choice.Candidates {
					found = found || (c.Contents != nil && c.Contents.Port == n)
				}
			}
			viaEnv := conn != nil && conn.OK && conn.Endpoint != nil && conn.Endpoint.Source == FromEnv && conn.Endpoint.Port == n
			switch {
			case found:
			case viaEnv:
				add(ide.EnvServerPort, "warning", fmt.Sprintf("no discovery file has port %d; the CLI reaches the companion through this variable alone", n), "")
			default:
				add(ide.EnvServerPort, "warning", fmt.Sprintf("no discovery file has port %d: this terminal was probably opened by an editor window that has since restarted its companion, or an earlier companion's export line was pasted here", n), "open a new terminal in the editor, or paste the export line the companion prints now (`gemkit ide serve`), or unset it")
			}
		}
	}
	if v := o.Getenv(ide.EnvServerStdioCmd); v != "" {
		if _, err := exec.LookPath(v); err != nil {
			add(ide.EnvServerStdioCmd, "error", fmt.Sprintf("the command %q cannot be found: %v", v, err), "set it to the companion's program (a full path, or a name on PATH), or unset it")
		}
	}
	if v := o.Getenv(ide.EnvServerStdioArgs); v != "" {
		var args []string
		switch {
		case o.Getenv(ide.EnvServerStdioCmd) == "":
			// The CLI reads the arguments only beside the command.
			add(ide.EnvServerStdioArgs, "warning", "is set without "+ide.EnvServerStdioCmd+", so the CLI ignores it", "unset it, or set "+ide.EnvServerStdioCmd+" too")
		case json.Unmarshal([]byte(v), &args) != nil:
			add(ide.EnvServerStdioArgs, "error", "is not a JSON array of strings; the CLI starts the command without arguments", `set it like '["--stdio"]'`)
		}
	}
	// A companion named by the environment alone: the workspace must come
	// from the environment too, or the CLI refuses before it starts the
	// command or dials the port, in words that name neither.
	if p.Contents == nil && errors.Is(p.Workspace, discovery.ErrNoWorkspace) &&
		(o.Getenv(ide.EnvServerStdioCmd) != "" || o.Getenv(ide.EnvServerPort) != "") {
		add(ide.EnvWorkspacePath, "error", "is not set, and no discovery file gives a workspace: the CLI refuses to connect to the companion the environment names without one, before it starts or dials it",
			"set it to the folder the companion serves (several joined with "+string(os.PathListSeparator)+"), for example: export "+ide.EnvWorkspacePath+"=\"$PWD\"")
	}
	if p.WorkspaceSource == "env" {
		var mm *discovery.MismatchError
		if errors.As(p.Workspace, &mm) {
			add(ide.EnvWorkspacePath, "error", "the current directory is outside "+strings.Join(mm.Folders, ", "), "cd into one of those folders")
		}
	}
}

// NoDiffTools reports whether a companion that lists tools offers no diffs
// at all, as gemkit's does for an editor that cannot show them (an LSP
// client without workspace/applyEdit), rather than one of the two diff
// tools only, which is a broken companion.
func NoDiffTools(tools []string) bool {
	return !slices.Contains(tools, ide.ToolOpenDiff) && !slices.Contains(tools, ide.ToolCloseDiff)
}

// diffingProblem is what doctor says of a companion with diffing off,
// given the tools it lists.
func diffingProblem(tools []string) (sev Severity, msg, fix string) {
	if NoDiffTools(tools) {
		return "warning", "the companion lists no diff tools: its editor cannot show diffs (an LSP client without workspace/applyEdit, such as Vim's ALE), so the CLI asks about each change in its own terminal and writes the file itself",
			"for diffs in the editor, use gemkit's plugin for it (docs/editors.md) or a language client that applies workspace edits"
	}
	return "error", "the companion lists tools [" + strings.Join(tools, ", ") + "], not both openDiff and closeDiff, so the CLI disables diffing", "update the companion"
}

// says reports whether a finding already says msg.
func (d *DoctorReport) says(msg string) bool {
	return slices.ContainsFunc(d.Findings, func(f Finding) bool { return f.Message == msg })
}
