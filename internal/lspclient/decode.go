package lspclient

import (
	"encoding/json"
	"fmt"

	"github.com/gemkit/gemkit/internal/codeintel"
)

// The answers' decoders, for internal/lspsource's Source: an editor,
// gemkit's Pool and its broker pass a server's answers on as they came,
// and LSP's unions are read in one place.

// DecodeLocations reads Location | Location[] | LocationLink[] | null
// (definition, implementation, references); a link counts as its
// target's name.
func DecodeLocations(raw json.RawMessage) ([]codeintel.Location, error) {
	locs, err := decodeLocations(raw)
	if err != nil {
		return nil, fmt.Errorf("locations: %w", err)
	}
	return locs, nil
}

// DecodeHover reads Hover | null.
func DecodeHover(raw json.RawMessage) (codeintel.Hover, error) {
	var h *wireHover
	if err := json.Unmarshal(orNull(raw), &h); err != nil {
		return codeintel.Hover{}, fmt.Errorf("hover: %w", err)
	}
	if h == nil {
		return codeintel.Hover{}, nil
	}
	return codeintel.Hover{Text: h.text(), Range: h.Range}, nil
}

// DecodeSymbols reads DocumentSymbol[] | SymbolInformation[] |
// WorkspaceSymbol[] | null; path is the document a DocumentSymbol is
// of ("" for a workspace's).
func DecodeSymbols(raw json.RawMessage, path string) ([]codeintel.Symbol, error) {
	var ws []wireSymbol
	if err := json.Unmarshal(orNull(raw), &ws); err != nil {
		return nil, fmt.Errorf("symbols: %w", err)
	}
	return symbols(ws, path), nil
}

// DecodeIncomingCalls reads CallHierarchyIncomingCall[] | null: each
// caller, with the calls' sites in it.
func DecodeIncomingCalls(raw json.RawMessage) ([]codeintel.Call, error) {
	var calls []wireIncoming
	if err := json.Unmarshal(orNull(raw), &calls); err != nil {
		return nil, fmt.Errorf("incoming calls: %w", err)
	}
	return incoming(calls), nil
}

// incoming is each caller, with the calls' sites in it.
func incoming(calls []wireIncoming) []codeintel.Call {
	out := make([]codeintel.Call, 0, len(calls))
	for _, in := range calls {
		call := codeintel.Call{Symbol: in.From.symbol()}
		for _, r := range in.FromRanges {
			call.Sites = append(call.Sites, location(in.From.URI, r))
		}
		out = append(out, call)
	}
	return out
}

// DecodeOutgoingCalls reads CallHierarchyOutgoingCall[] | null: each
// function called, with the calls' sites in the function asked about,
// whose item's URI is itemURI.
func DecodeOutgoingCalls(raw json.RawMessage, itemURI string) ([]codeintel.Call, error) {
	var calls []wireOutgoing
	if err := json.Unmarshal(orNull(raw), &calls); err != nil {
		return nil, fmt.Errorf("outgoing calls: %w", err)
	}
	return outgoing(calls, itemURI), nil
}

// outgoing is each function called, with the calls' sites in the
// function whose item's URI is itemURI.
func outgoing(calls []wireOutgoing, itemURI string) []codeintel.Call {
	out := make([]codeintel.Call, 0, len(calls))
	for _, o := range calls {
		call := codeintel.Call{Symbol: o.To.symbol()}
		for _, r := range o.FromRanges {
			call.Sites = append(call.Sites, location(itemURI, r))
		}
		out = append(out, call)
	}
	return out
}

// CallItemURI is the URI of a CallHierarchyItem.
func CallItemURI(raw json.RawMessage) (string, error) {
	var it wireCallItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return "", fmt.Errorf("call hierarchy item: %w", err)
	}
	return it.URI, nil
}

// orNull is raw, or null when the answer had none.
func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}
