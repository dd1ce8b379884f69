package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

// FileStatus describes one discovery file for people and scripts.
type FileStatus struct {
	Name          string       `json:"name"`
	Path          string       `json:"path"`
	PID           int          `json:"pid"`
	Port          int          `json:"port,omitempty"`
	Legacy        bool         `json:"legacy,omitempty"`
	PIDMatch      bool         `json:"pidMatch"`
	Alive         bool         `json:"alive"`
	Owner         int          `json:"owner"`
	Mode          string       `json:"mode,omitempty"`
	Usable        bool         `json:"usable"`
	Error         string       `json:"error,omitempty"`
	WorkspacePath *string      `json:"workspacePath,omitempty"`
	InWorkspace   bool         `json:"inWorkspace"`
	Workspace     string       `json:"workspaceError,omitempty"`
	IDEInfo       *ide.IDEInfo `json:"ideInfo,omitempty"`
	Chosen        bool         `json:"chosen,omitempty"`
	// For Qwen Code's lock files: how the CLI came to read the file
	// (discovery.QwenCandidate.Source), its ppid, and why the CLI deletes
	// it when it looks ("" when it keeps it). PID is then 0 and Alive
	// says whether the ppid runs.
	Source discovery.QwenSource `json:"source,omitempty"`
	PPID   int                  `json:"ppid,omitempty"`
	Stale  string               `json:"stale,omitempty"`
	// Stdio is the stdio command the file names (a bridge, as gemkit's
	// companion writes, or a companion of its own).
	Stdio *ide.StdioConfig `json:"stdio,omitempty"`
}

// ConnectStatus is the result of trying to connect.
type ConnectStatus struct {
	OK       bool        `json:"ok"`
	Error    string      `json:"error,omitempty"`
	Endpoint *Endpoint   `json:"endpoint,omitempty"`
	Server   *ServerInfo `json:"server,omitempty"`
	Tools    []string    `json:"tools,omitempty"`
	Diffing  bool        `json:"diffing"`
	Attempts []string    `json:"attempts,omitempty"`
}

// StatusReport is what `gemkit ide status` shows.
type StatusReport struct {
	// Agent is the CLI whose rules the report follows ("" is Gemini CLI,
	// "qwen" Qwen Code).
	Agent     string               `json:"agent,omitempty"`
	Dir       string               `json:"dir"`
	Cwd       string               `json:"cwd"`
	Process   discovery.IDEProcess `json:"ideProcess"`
	Files     []FileStatus         `json:"files"`
	Chosen    string               `json:"chosen,omitempty"`
	Reason    string               `json:"reason,omitempty"`
	DirError  string               `json:"dirError,omitempty"`
	IDE       *ide.IDEInfo         `json:"ide,omitempty"`
	Endpoints []Endpoint           `json:"endpoints"`
	Connect   *ConnectStatus       `json:"connect,omitempty"`
	// [Plan] is the underlying decision, for callers in Go.
	Plan *Plan `json:"-"`
}

// Inspect lists every discovery file, says which one the CLI would pick in
// o.Cwd and why, and (when connect is set) whether it connects.
func Inspect(ctx context.Context, o Options, connect bool) (*StatusReport, error) {
	o.defaults()
	p, err := Discover(ctx, o)
	if err != nil {
		return nil, err
	}
	r := &StatusReport{Agent: p.Agent, Cwd: p.Cwd, Process: p.Process, IDE: p.IDE, Endpoints: p.Endpoints, Plan: p}
	if r.Endpoints == nil {
		r.Endpoints = []Endpoint{}
	}
	if p.ChoiceErr != nil {
		r.DirError = p.ChoiceErr.Error()
	}
	if ch := p.QwenChoice; ch != nil {
		r.Dir = ch.Dir
		for _, c := range ch.Files() {
			r.Files = append(r.Files, qwenFileStatus(c, c == ch.Chosen))
		}
		if ch.Chosen != nil {
			r.Chosen, r.Reason = ch.Chosen.Name, ch.Reason
		}
	}
	if ch := p.Choice; ch != nil {
		r.Dir = ch.Dir
		all := ch.Candidates
		if ch.Legacy != nil {
			all = append([]*discovery.Candidate{ch.Legacy}, all...)
		}
		for _, c := range all {
			r.Files = append(r.Files, fileStatus(c, c == ch.Chosen))
		}
		if ch.Chosen != nil {
			r.Chosen, r.Reason = ch.Chosen.Name, ch.Reason
		}
	}
	if r.Files == nil {
		r.Files = []FileStatus{}
	}
	if connect {
		r.Connect = tryConnect(ctx, o)
	}
	return r, nil
}

func fileStatus(c *discovery.Candidate, chosen bool) FileStatus {
	f := FileStatus{Name: c.Name, Path: c.Path, PID: c.PID, Port: c.Port, Legacy: c.Legacy, PIDMatch: c.PIDMatch,
		Alive: c.Alive, Owner: c.Owner, Usable: c.Usable(), Chosen: chosen}
	if c.Owner >= 0 || c.Mode != 0 {
		f.Mode = fmt.Sprintf("%04o", c.Mode)
	}
	if c.Err != nil {
		f.Error = c.Err.Error()
	}
	if c.Contents != nil {
		f.WorkspacePath = c.Contents.WorkspacePath
		f.IDEInfo = c.Contents.IDEInfo
		f.Stdio = c.Contents.Stdio
		f.InWorkspace = c.Workspace == nil
		if c.Workspace != nil {
			f.Workspace = c.Workspace.Error()
		}
	}
	return f
}

func qwenFileStatus(c *discovery.QwenCandidate, chosen bool) FileStatus {
	f := FileStatus{Name: c.Name, Path: c.Path, Port: c.Port, Legacy: c.Legacy(), Owner: c.Owner,
		Usable: c.Contents != nil && c.Stale == "", Chosen: chosen, Source: c.Source, Stale: c.Stale}
	if c.Owner >= 0 || c.Mode != 0 {
		f.Mode = fmt.Sprintf("%04o", c.Mode)
	}
	if c.Err != nil {
		f.Error = c.Err.Error()
	}
	if c.Contents != nil {
		if pid, ok := c.Contents.PPID(); ok {
			f.PPID, f.Alive = pid, discovery.ProcessAlive(pid)
		}
		f.WorkspacePath = c.Contents.WorkspacePath
		f.IDEInfo = c.Contents.IDEInfo
		f.Stdio = c.Contents.Stdio
		f.InWorkspace = c.Workspace == nil && c.Contents.WorkspacePath != nil
		if c.Workspace != nil {
			f.Workspace = c.Workspace.Error()
		} else if c.Contents.WorkspacePath == nil {
			f.Workspace = "no workspacePath"
		}
	}
	return f
}

func tryConnect(ctx context.Context, o Options) *ConnectStatus {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, _, err := Connect(ctx, o)
	cs := &ConnectStatus{}
	if err != nil {
		cs.Error = err.Error()
		var ce *ConnectError
		if errors.As(err, &ce) {
			for _, a := range ce.Attempts {
				cs.Attempts = append(cs.Attempts, fmt.Sprintf("%s: %v", a.Endpoint, a.Err))
			}
		}
		return cs
	}
	defer c.Close(context.Background())
	ep, srv := c.Endpoint(), c.Server()
	cs.OK, cs.Endpoint, cs.Server, cs.Diffing = true, &ep, &srv, c.DiffingEnabled()
	for _, t := range c.Tools() {
		cs.Tools = append(cs.Tools, t.Name)
	}
	return cs
}
