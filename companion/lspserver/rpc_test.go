package lspserver

import "github.com/gemkit/gemkit/internal/jsonrpc"

// frame returns body with its Content-Length header, as a client sends it.
func frame(body []byte) []byte { return jsonrpc.HeaderFramer().Frame(body) }
