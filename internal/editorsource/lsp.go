package editorsource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/codeintel"
)

// The LSP 3.17 shapes the editor's clients answer with, decoded into
// codeintel's terms. Positions pass unchanged: the editor protocol counts
// them in UTF-16 code units, as LSP and codeintel do.

// fileURI is the file:// URI of an absolute path.
func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// uriPath is the absolute path of a file:// URI, "" for any other.
func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return ""
	}
	return filepath.Clean(filepath.FromSlash(u.Path))
}

func location(uri string, r codeintel.Range) codeintel.Location {
	if p := uriPath(uri); p != "" {
		return codeintel.Location{Path: p, Range: r}
	}
	return codeintel.Location{URI: uri, Range: r}
}

// isNull reports whether an answer is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// decodeLocations reads Location | Location[] | LocationLink[] | null
// (definition, declaration, implementation, references).
func decodeLocations(raw json.RawMessage) ([]codeintel.Location, error) {
	if isNull(raw) {
		return nil, nil
	}
	type link struct {
		URI                  string           `json:"uri"`
		Range                *codeintel.Range `json:"range"`
		TargetURI            string           `json:"targetUri"`
		TargetRange          codeintel.Range  `json:"targetRange"`
		TargetSelectionRange *codeintel.Range `json:"targetSelectionRange"`
	}
	var many []link
	if t := bytes.TrimSpace(raw); t[0] != '[' {
		var one link
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, fmt.Errorf("a location: %w", err)
		}
		many = []link{one}
	} else if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("locations: %w", err)
	}
	out := make([]codeintel.Location, 0, len(many))
	for _, l := range many {
		switch {
		case l.TargetURI != "":
			r := l.TargetRange
			if l.TargetSelectionRange != nil {
				r = *l.TargetSelectionRange
			}
			out = append(out, location(l.TargetURI, r))
		case l.URI != "" && l.Range != nil:
			out = append(out, location(l.URI, *l.Range))
		default:
			return nil, fmt.Errorf("a location without uri and range")
		}
	}
	return out, nil
}

// decodeHover reads Hover | null; its contents are MarkupContent, a
// MarkedString or MarkedString[].
func decodeHover(raw json.RawMessage) (codeintel.Hover, error) {
	if isNull(raw) {
		return codeintel.Hover{}, nil
	}
	var h struct {
		Contents json.RawMessage  `json:"contents"`
		Range    *codeintel.Range `json:"range"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return codeintel.Hover{}, fmt.Errorf("hover: %w", err)
	}
	text, err := markedText(h.Contents)
	if err != nil {
		return codeintel.Hover{}, err
	}
	return codeintel.Hover{Text: text, Range: h.Range}, nil
}

func markedText(raw json.RawMessage) (string, error) {
	t := bytes.TrimSpace(raw)
	switch {
	case isNull(t):
		return "", nil
	case t[0] == '"':
		var s string
		err := json.Unmarshal(t, &s)
		return s, err
	case t[0] == '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(t, &parts); err != nil {
			return "", fmt.Errorf("hover contents: %w", err)
		}
		var texts []string
		for _, p := range parts {
			s, err := markedText(p)
			if err != nil {
				return "", err
			}
			if strings.TrimSpace(s) != "" {
				texts = append(texts, s)
			}
		}
		return strings.Join(texts, "\n\n"), nil
	}
	var m struct {
		Kind     string `json:"kind"`
		Language string `json:"language"`
		Value    string `json:"value"`
	}
	if err := json.Unmarshal(t, &m); err != nil {
		return "", fmt.Errorf("hover contents: %w", err)
	}
	if m.Language != "" {
		return "```" + m.Language + "\n" + m.Value + "\n```", nil
	}
	return m.Value, nil
}

// lspSymbol is a DocumentSymbol, a SymbolInformation or a
// WorkspaceSymbol, told apart by their members.
type lspSymbol struct {
	Name           string               `json:"name"`
	Kind           codeintel.SymbolKind `json:"kind"`
	Detail         string               `json:"detail"`
	ContainerName  string               `json:"containerName"`
	Range          *codeintel.Range     `json:"range"`
	SelectionRange *codeintel.Range     `json:"selectionRange"`
	Children       []lspSymbol          `json:"children"`
	Location       *struct {
		URI   string           `json:"uri"`
		Range *codeintel.Range `json:"range"`
	} `json:"location"`
}

func (s lspSymbol) symbol(path string) codeintel.Symbol {
	out := codeintel.Symbol{Name: s.Name, Kind: s.Kind, Detail: s.Detail, Container: s.ContainerName}
	switch {
	case s.Location != nil:
		var r codeintel.Range
		if s.Location.Range != nil {
			r = *s.Location.Range
		}
		out.Location = location(s.Location.URI, r)
	case s.Range != nil:
		out.Location = codeintel.Location{Path: path, Range: *s.Range}
	}
	if s.SelectionRange != nil {
		out.Selection = *s.SelectionRange
	}
	for _, c := range s.Children {
		out.Children = append(out.Children, c.symbol(path))
	}
	return out
}

// decodeSymbols reads DocumentSymbol[] | SymbolInformation[] |
// WorkspaceSymbol[] | null; path is the file a document's symbols are of.
func decodeSymbols(raw json.RawMessage, path string) ([]codeintel.Symbol, error) {
	if isNull(raw) {
		return nil, nil
	}
	var syms []lspSymbol
	if err := json.Unmarshal(raw, &syms); err != nil {
		return nil, fmt.Errorf("symbols: %w", err)
	}
	out := make([]codeintel.Symbol, 0, len(syms))
	for _, s := range syms {
		out = append(out, s.symbol(path))
	}
	return out, nil
}

// callItem is a CallHierarchyItem, kept whole to be sent back.
type callItem struct {
	Name           string               `json:"name"`
	Kind           codeintel.SymbolKind `json:"kind"`
	Detail         string               `json:"detail"`
	URI            string               `json:"uri"`
	Range          codeintel.Range      `json:"range"`
	SelectionRange codeintel.Range      `json:"selectionRange"`
}

func (c callItem) symbol() codeintel.Symbol {
	return codeintel.Symbol{Name: c.Name, Kind: c.Kind, Detail: c.Detail, Location: location(c.URI, c.Range), Selection: c.SelectionRange}
}

// decodeCalls reads CallHierarchyIncomingCall[] (from) or
// CallHierarchyOutgoingCall[] (to); siteURI is the file the fromRanges
// of an outgoing call lie in (the function asked about).
func decodeCalls(raw json.RawMessage, incoming bool, siteURI string) ([]codeintel.Call, error) {
	if isNull(raw) {
		return nil, nil
	}
	var calls []struct {
		From       *json.RawMessage  `json:"from"`
		To         *json.RawMessage  `json:"to"`
		FromRanges []codeintel.Range `json:"fromRanges"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, fmt.Errorf("calls: %w", err)
	}
	out := make([]codeintel.Call, 0, len(calls))
	for _, c := range calls {
		itemRaw := c.To
		if incoming {
			itemRaw = c.From
		}
		if itemRaw == nil {
			return nil, fmt.Errorf("a call without its %s item", map[bool]string{true: "from", false: "to"}[incoming])
		}
		var it callItem
		if err := json.Unmarshal(*itemRaw, &it); err != nil {
			return nil, fmt.Errorf("a call's item: %w", err)
		}
		site := siteURI
		if incoming {
			site = it.URI
		}
		call := codeintel.Call{Symbol: it.symbol()}
		for _, r := range c.FromRanges {
			call.Sites = append(call.Sites, location(site, r))
		}
		out = append(out, call)
	}
	return out, nil
}

// positionParams are a TextDocumentPositionParams.
func positionParams(at codeintel.DocPos) map[string]any {
	return map[string]any{
		"textDocument": map[string]string{"uri": fileURI(at.Path)},
		"position":     at.Pos,
	}
}
