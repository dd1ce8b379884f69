package lspclient

import (
	"bytes"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/codeintel"
)

// The wire types of the LSP 3.17 subset the client uses, written here
// rather than taken from a protocol package: the Go module proxy's
// go.lsp.dev/protocol was last released in 2022, covers LSP 3.15/3.16,
// and brings go.uber.org/zap and its own JSON-RPC with it; x/tools' gopls
// protocol package is internal. The subset is small, and the unions
// servers answer with (Location | Location[] | LocationLink[], the two
// symbol shapes, the three hover shapes) are decoded here, once.

// URI is a file:// URI for an absolute path.
func URI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// PathOf is the absolute path of a file:// URI, or "" for another
// scheme or a malformed one.
func PathOf(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return ""
	}
	return filepath.FromSlash(u.Path)
}

type textDocumentID struct {
	URI string `json:"uri"`
}

type wireLocation struct {
	URI   string          `json:"uri"`
	Range codeintel.Range `json:"range"`
	// LocationLink's fields.
	TargetURI            string           `json:"targetUri"`
	TargetRange          codeintel.Range  `json:"targetRange"`
	TargetSelectionRange *codeintel.Range `json:"targetSelectionRange"`
}

func location(uri string, r codeintel.Range) codeintel.Location {
	if p := PathOf(uri); p != "" {
		return codeintel.Location{Path: p, Range: r}
	}
	return codeintel.Location{URI: uri, Range: r}
}

// decodeLocations reads Location | Location[] | LocationLink[] | null.
func decodeLocations(raw json.RawMessage) ([]codeintel.Location, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if locs, ok := scanLocations(raw); ok {
		return locs, nil
	}
	return decodeLocationsJSON(raw)
}

// decodeLocationsJSON is decodeLocations by encoding/json, for what
// scanLocations declines.
func decodeLocationsJSON(raw json.RawMessage) ([]codeintel.Location, error) {
	var many []wireLocation
	if raw[0] == '{' {
		var one wireLocation
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, err
		}
		many = []wireLocation{one}
	} else if err := json.Unmarshal(raw, &many); err != nil {
		return nil, err
	}
	out := make([]codeintel.Location, 0, len(many))
	// The answer to a references request names the same files again and
	// again: each URI is parsed once.
	paths := map[string]string{}
	for _, w := range many {
		uri, r := w.URI, w.Range
		if w.TargetURI != "" {
			uri, r = w.TargetURI, w.TargetRange
			if w.TargetSelectionRange != nil {
				r = *w.TargetSelectionRange
			}
		}
		p, ok := paths[uri]
		if !ok {
			p = PathOf(uri)
			paths[uri] = p
		}
		if p != "" {
			out = append(out, codeintel.Location{Path: p, Range: r})
		} else {
			out = append(out, codeintel.Location{URI: uri, Range: r})
		}
	}
	return out, nil
}

// wireSymbol is a DocumentSymbol, a SymbolInformation or a
// WorkspaceSymbol: the client reads whichever fields are there.
type wireSymbol struct {
	Name           string               `json:"name"`
	Kind           codeintel.SymbolKind `json:"kind"`
	Detail         string               `json:"detail"`
	ContainerName  string               `json:"containerName"`
	Range          *codeintel.Range     `json:"range"`
	SelectionRange *codeintel.Range     `json:"selectionRange"`
	Children       []wireSymbol         `json:"children"`
	Location       *struct {
		URI   string           `json:"uri"`
		Range *codeintel.Range `json:"range"`
	} `json:"location"`
}

// symbols turns wire symbols into codeintel's. A DocumentSymbol has no
// URI of its own: path is the document's.
func symbols(ws []wireSymbol, path string) []codeintel.Symbol {
	out := make([]codeintel.Symbol, 0, len(ws))
	for _, w := range ws {
		s := codeintel.Symbol{Name: w.Name, Kind: w.Kind, Detail: w.Detail, Container: w.ContainerName}
		switch {
		case w.Location != nil:
			var r codeintel.Range
			if w.Location.Range != nil {
				r = *w.Location.Range
			}
			s.Location = location(w.Location.URI, r)
		case w.Range != nil:
			s.Location = codeintel.Location{Path: path, Range: *w.Range}
		default:
			s.Location = codeintel.Location{Path: path}
		}
		if w.SelectionRange != nil {
			s.Selection = *w.SelectionRange
		}
		if len(w.Children) > 0 {
			s.Children = symbols(w.Children, path)
		}
		out = append(out, s)
	}
	return out
}

// hover reads Hover's contents: MarkupContent, a MarkedString, or an
// array of MarkedStrings.
type wireHover struct {
	Contents json.RawMessage  `json:"contents"`
	Range    *codeintel.Range `json:"range"`
}

func (h wireHover) text() string {
	raw := bytes.TrimSpace(h.Contents)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	marked := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var ms struct {
			Language string `json:"language"`
			Value    string `json:"value"`
			Kind     string `json:"kind"`
		}
		if json.Unmarshal(raw, &ms) != nil {
			return ""
		}
		if ms.Language != "" {
			return "```" + ms.Language + "\n" + ms.Value + "\n```"
		}
		return ms.Value
	}
	if raw[0] == '[' {
		var parts []json.RawMessage
		if json.Unmarshal(raw, &parts) != nil {
			return ""
		}
		var out []string
		for _, p := range parts {
			if s := strings.TrimSpace(marked(p)); s != "" {
				out = append(out, s)
			}
		}
		return strings.Join(out, "\n\n")
	}
	return marked(raw)
}

type wireCallItem struct {
	Name           string               `json:"name"`
	Kind           codeintel.SymbolKind `json:"kind"`
	Detail         string               `json:"detail,omitempty"`
	URI            string               `json:"uri"`
	Range          codeintel.Range      `json:"range"`
	SelectionRange codeintel.Range      `json:"selectionRange"`
	Data           json.RawMessage      `json:"data,omitempty"`
}

func (w wireCallItem) symbol() codeintel.Symbol {
	return codeintel.Symbol{Name: w.Name, Kind: w.Kind, Detail: w.Detail, Location: location(w.URI, w.Range), Selection: w.SelectionRange}
}

type wireIncoming struct {
	From       wireCallItem      `json:"from"`
	FromRanges []codeintel.Range `json:"fromRanges"`
}

type wireOutgoing struct {
	To         wireCallItem      `json:"to"`
	FromRanges []codeintel.Range `json:"fromRanges"`
}

type wireDiagnostic struct {
	Range    codeintel.Range    `json:"range"`
	Severity codeintel.Severity `json:"severity"`
	Code     json.RawMessage    `json:"code"`
	Source   string             `json:"source"`
	Message  string             `json:"message"`
}

func (w wireDiagnostic) diagnostic() codeintel.Diagnostic {
	d := codeintel.Diagnostic{Range: w.Range, Severity: w.Severity, Source: w.Source, Message: w.Message}
	if len(w.Code) > 0 && string(w.Code) != "null" {
		var s string
		if json.Unmarshal(w.Code, &s) == nil {
			d.Code = s
		} else {
			d.Code = string(w.Code)
		}
	}
	return d
}

type publishParams struct {
	URI         string           `json:"uri"`
	Version     *int             `json:"version"`
	Diagnostics []wireDiagnostic `json:"diagnostics"`
}

type progressParams struct {
	Token json.RawMessage `json:"token"`
	Value struct {
		Kind       string `json:"kind"`
		Title      string `json:"title"`
		Message    string `json:"message"`
		Percentage *int   `json:"percentage"`
	} `json:"value"`
}

// capabilities are the server capabilities the client looks at: a
// provider is offered when its member is present and not false.
type capabilities struct {
	raw map[string]json.RawMessage
}

func (c capabilities) offers(name string) bool {
	v, ok := c.raw[name]
	if !ok {
		return false
	}
	s := string(bytes.TrimSpace(v))
	return s != "false" && s != "null"
}
