package conformance

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/ide/discovery"
)

// chosenFile is the discovery file (or Qwen Code lock file) the CLI would
// pick, as the discovery checks after the first read it.
type chosenFile struct {
	mode  fs.FileMode
	owner int
	conf  *discovery.Contents
}

func (e *env) discoveryFile() verdict {
	p := e.plan
	if p.Choice == nil || p.Choice.Chosen == nil {
		detail := "no discovery file for this directory"
		if p.ChoiceErr != nil {
			detail = p.ChoiceErr.Error()
		}
		if p.Choice != nil {
			detail += fmt.Sprintf(" (%d files in %s, IDE pid %d)", len(p.Choice.Candidates), p.Choice.Dir, p.Choice.IDEPID)
		}
		return failf("%s", detail).last()
	}
	c := p.Choice.Chosen
	e.r.File = c.Path
	e.disc = chosenFile{mode: c.Mode, owner: c.Owner, conf: c.Contents}
	return passf("%s: %s", c.Name, p.Choice.Reason)
}

func (e *env) discoveryName() verdict {
	c := e.plan.Choice.Chosen
	switch {
	case c.Legacy:
		return warnf("legacy name %s; current companions add the port", c.Name)
	case c.Port != c.Contents.Port:
		return failf("the name says port %d, the content %q", c.Port, c.Contents.PortText)
	}
	return passf("")
}

func (e *env) fileMode() verdict {
	if m := e.disc.mode; m&0o077 != 0 {
		return failf("mode is %04o; other users can read the token", m)
	}
	return passf("%04o", e.disc.mode)
}

func (e *env) fileOwner() verdict {
	if o := e.disc.owner; o >= 0 && o != os.Getuid() {
		return failf("owned by uid %d", o)
	}
	return passf("")
}

func (e *env) discoveryPID() verdict {
	c := e.plan.Choice.Chosen
	if !c.Alive {
		return warnf("pid %d is not running: a stale file?", c.PID)
	}
	return passf("pid %d", c.PID)
}

func (e *env) discoveryFields() verdict {
	conf := e.disc.conf
	var probs []string
	for _, k := range slices.Sorted(maps.Keys(conf.Raw)) {
		if string(conf.Raw[k]) == "null" {
			probs = append(probs, k+" is null")
		}
	}
	probs = append(probs, fieldProblems(conf, true)...)
	if conf.Port != 0 && (conf.Port < 1 || conf.Port > 65535) {
		probs = append(probs, fmt.Sprintf("port %d is out of range", conf.Port))
	}
	if conf.AuthToken != nil && *conf.AuthToken == "" {
		probs = append(probs, "authToken is empty")
	}
	if conf.WorkspacePath != nil {
		for _, f := range strings.Split(*conf.WorkspacePath, string(os.PathListSeparator)) {
			if f != "" && !filepath.IsAbs(f) {
				probs = append(probs, fmt.Sprintf("workspace folder %q is not absolute", f))
			}
		}
	}
	return problems(probs)
}

// fieldProblems checks the type of each field the CLI reads; a null is
// taken as absent when nullOK (it is reported apart).
func fieldProblems(conf *discovery.Contents, nullOK bool) []string {
	var probs []string
	want := map[string]string{"port": "number", "workspacePath": "string", "authToken": "string", "ideInfo": "object"}
	for _, k := range []string{"port", "workspacePath", "authToken", "ideInfo"} {
		v, ok := conf.Raw[k]
		if !ok {
			if k == "port" && conf.Stdio != nil {
				continue
			}
			probs = append(probs, k+" is missing")
			continue
		}
		if got := kind(v); got != want[k] && (!nullOK || got != "null") {
			probs = append(probs, fmt.Sprintf("%s is a %s, not a %s", k, got, want[k]))
		}
	}
	return probs
}

// problems is a verdict on a list of problems: none passes.
func problems(probs []string) verdict {
	if len(probs) > 0 {
		return failf("%s", strings.Join(probs, "; "))
	}
	return passf("")
}

func (e *env) discoveryIDEInfo() verdict {
	return e.ideInfo("without ideInfo {name, displayName} the real CLI connects only from terminals it knows (TERM_PROGRAM=vscode, sublime, Zed, ZED_SESSION_ID, XCODE_VERSION_ACTUAL, JetBrains)")
}

// ideInfo checks that the file names the editor: without, the CLI
// refuses to connect (fail) unless the terminal names it (warn), as
// missing says.
func (e *env) ideInfo(missing string) verdict {
	info := e.disc.conf.IDEInfo
	if info == nil || info.Name == "" || info.DisplayName == "" {
		if e.plan.IDE != nil {
			return warnf("%s", missing)
		}
		return failf("%s", missing)
	}
	return passf("%s (%s)", info.DisplayName, info.Name)
}

func (e *env) workspace() verdict {
	if e.plan.Workspace != nil {
		return failf("%v", e.plan.Workspace)
	}
	return passf("workspace from the %s", e.plan.WorkspaceSource)
}

func (e *env) qwenFile() verdict {
	ch, p := e.plan.QwenChoice, e.plan
	if ch == nil || ch.Chosen == nil {
		detail := "no Qwen Code lock file for this directory"
		if p.ChoiceErr != nil {
			detail = p.ChoiceErr.Error()
		}
		if ch != nil {
			detail += fmt.Sprintf(" (%d files in %s)", len(ch.Candidates), ch.Dir)
		}
		return failf("%s", detail).last()
	}
	c := ch.Chosen
	e.r.File = c.Path
	e.disc = chosenFile{mode: c.Mode, owner: c.Owner, conf: c.Contents}
	return passf("%s: %s", c.Name, ch.Reason)
}

func (e *env) qwenName() verdict {
	c := e.plan.QwenChoice.Chosen
	switch {
	case c.Legacy():
		return warnf("legacy file %s; current companions write <port>.lock", c.Path)
	case c.Contents.PortText != "" && c.Name != c.Contents.PortText+".lock":
		return failf("the name is %s, the content's port %q", c.Name, c.Contents.PortText)
	}
	return passf("")
}

func (e *env) qwenPPID() verdict {
	pid, ok := e.disc.conf.PPID()
	if !ok {
		return warnf("no ppid: Qwen Code cannot tell a dead companion's file, and keeps it while its workspace folder exists")
	}
	return passf("ppid %d runs", pid)
}

func (e *env) qwenFields() verdict {
	conf := e.disc.conf
	probs := fieldProblems(conf, false)
	if conf.AuthToken != nil && *conf.AuthToken == "" {
		probs = append(probs, "authToken is empty (Qwen Code has no token variable to fall back on)")
	}
	return problems(probs)
}

func (e *env) qwenIDEInfo() verdict {
	return e.ideInfo("without ideInfo {name, displayName} Qwen Code connects only from VS Code's terminal (TERM_PROGRAM=vscode)")
}
