package lspclient

import (
	"context"
	"encoding/json"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
)

// Request sends one request of ide.LSPMethods as it came and returns the
// server's result as it sent it: codeintel.ErrUnsupported when the
// server does not offer it. The document it is about must be open.
func (c *Client) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	capability := ide.LSPCapability(method)
	if capability == "" || !c.Offers(capability) {
		return nil, codeintel.ErrUnsupported
	}
	var raw json.RawMessage
	if err := c.request(ctx, method, params, &raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	return raw, nil
}
