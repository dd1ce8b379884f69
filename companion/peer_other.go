//go:build !linux

package companion

import "net/http"

func peerConnOf(r *http.Request) peerConn { return peerConn{remote: r.RemoteAddr} }

// peerOf is not available here: clients are told apart by their name and
// the time they connected only.
func peerOf(peerConn) peerProcess { return peerProcess{} }
