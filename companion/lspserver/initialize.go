package lspserver

// initialize: what the client says about itself, and what gemkit offers it.

import (
	"encoding/json"
	"net"
	"strings"

	"github.com/gemkit/gemkit/companion"
)

// clientCaps is what gemkit uses of the client's capabilities.
type clientCaps struct {
	applyEdit    bool
	showDocument bool
	showMessage  bool
}

type initializeParams struct {
	ProcessID        *int    `json:"processId"`
	RootURI          *string `json:"rootUri"`
	RootPath         *string `json:"rootPath"`
	WorkspaceFolders *[]struct {
		URI string `json:"uri"`
	} `json:"workspaceFolders"`
	ClientInfo *struct {
		Name string `json:"name"`
	} `json:"clientInfo"`
	Capabilities struct {
		Workspace struct {
			ApplyEdit bool `json:"applyEdit"`
		} `json:"workspace"`
		Window struct {
			ShowDocument *struct {
				Support bool `json:"support"`
			} `json:"showDocument"`
			ShowMessage *json.RawMessage `json:"showMessage"`
		} `json:"window"`
	} `json:"capabilities"`
}

func (s *Server) initialize(id json.RawMessage, raw json.RawMessage, start StartFunc) {
	var p initializeParams
	if e := decode("initialize", raw, &p); e != nil {
		s.fail(id, "initialize", e)
		return
	}
	in := Init{}
	if p.ProcessID != nil && *p.ProcessID > 0 {
		in.ProcessID = *p.ProcessID
	}
	if p.ClientInfo != nil {
		in.ClientName = p.ClientInfo.Name
	}
	switch {
	case p.WorkspaceFolders != nil && len(*p.WorkspaceFolders) > 0:
		for _, f := range *p.WorkspaceFolders {
			if path := pathOf(f.URI); path != "" {
				in.Workspace = append(in.Workspace, path)
			} else {
				s.log.Warn("lsp: workspace folder that is not a file: URI ignored", "uri", f.URI)
			}
		}
	case p.RootURI != nil && *p.RootURI != "":
		if path := pathOf(*p.RootURI); path != "" {
			in.Workspace = []string{path}
		}
	case p.RootPath != nil && *p.RootPath != "":
		in.Workspace = []string{*p.RootPath}
	}
	caps := clientCaps{
		applyEdit:    p.Capabilities.Workspace.ApplyEdit,
		showDocument: p.Capabilities.Window.ShowDocument != nil && p.Capabilities.Window.ShowDocument.Support,
		showMessage:  p.Capabilities.Window.ShowMessage != nil,
	}
	// Before the companion starts: a CLI that connects at once asks
	// ShowsDiffs for its tool list.
	s.mu.Lock()
	s.caps = caps
	s.mu.Unlock()
	var ev companion.Events
	var lead net.Listener
	var err error
	if path := s.groupPath(in); path != "" {
		ev, lead, err = s.join(path, in, start)
	} else {
		ev, err = start(in)
	}
	if err != nil {
		s.fail(id, "initialize", &Error{Code: CodeInternalError, Message: "gemkit could not start its IDE companion: " + err.Error()})
		return
	}
	s.mu.Lock()
	s.phase = phaseRunning
	s.ev = ev
	s.folders = in.Workspace
	s.mu.Unlock()
	if lead != nil {
		s.startLead(lead) // followers' messages need s.ev
	}
	if !caps.applyEdit {
		s.log.Warn("lsp: the client cannot apply workspace edits; diffs cannot be shown in it")
	}
	s.reply(id, initializeResult(s.opts.Version, wantsHover(in.ClientName)), nil)
}

// wantsHover reports whether the client only reports the resting cursor
// when the server has hover: eglot sends documentHighlight only from its
// hover eldoc function, behind hoverProvider (eglot 1.9, eglot.el,
// eglot-hover-eldoc-function), and names itself "Eglot" in clientInfo
// from 1.10 on (none before). Other clients (Neovim: "No information
// available" for an empty hover, next to the real server's) are better
// without it.
func wantsHover(clientName string) bool {
	return clientName == "" || strings.EqualFold(clientName, "eglot")
}

// initializeResult advertises only what tells gemkit the person's context
// (documentHighlight: clients that highlight on cursor idle report the
// cursor; hover for eglot) and what answers a proposal (code actions and
// their commands).
func initializeResult(version string, hover bool) any {
	caps := map[string]any{
		"textDocumentSync": map[string]any{
			"openClose": true,
			"change":    1, // full text: no drift between client and server
			"save":      map[string]any{"includeText": true},
		},
		"documentHighlightProvider": true,
		"codeActionProvider":        true,
		"executeCommandProvider": map[string]any{
			"commands": []string{CommandAccept, CommandReject},
		},
		"workspace": map[string]any{
			"workspaceFolders": map[string]any{"supported": true, "changeNotifications": true},
		},
	}
	if hover {
		caps["hoverProvider"] = true
	}
	return map[string]any{"capabilities": caps, "serverInfo": map[string]any{"name": "gemkit", "version": version}}
}
