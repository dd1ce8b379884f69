package editorsource

import (
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/lspclient"
)

// positionParams are a TextDocumentPositionParams. Positions pass
// unchanged: the editor protocol counts them in UTF-16 code units, as LSP
// and codeintel do. The answers are read by internal/lspclient's
// decoders, as gemkit's own servers' are.
func positionParams(at codeintel.DocPos) map[string]any {
	return map[string]any{
		"textDocument": map[string]string{"uri": lspclient.URI(at.Path)},
		"position":     at.Pos,
	}
}
