package mcpserver

// The extensions' docs, served as resources at DocURI.

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DocScheme is the URI scheme of doc resources:
// gemkit-doc://EXTENSION/NAME, both parts path-escaped.
const DocScheme = "gemkit-doc"

// DocURI is the resource URI of a doc.
func DocURI(ext, name string) string {
	return DocScheme + "://" + url.PathEscape(ext) + "/" + url.PathEscape(name)
}

// parseDocURI is the inverse of DocURI.
func parseDocURI(uri string) (ext, name string, err error) {
	rest, ok := strings.CutPrefix(uri, DocScheme+"://")
	if !ok {
		return "", "", fmt.Errorf("%q is not a %s:// URI", uri, DocScheme)
	}
	e, n, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", fmt.Errorf("%q does not name an extension and a doc", uri)
	}
	if ext, err = url.PathUnescape(e); err != nil {
		return "", "", err
	}
	if name, err = url.PathUnescape(n); err != nil {
		return "", "", err
	}
	return ext, name, nil
}

func (s *Server) readResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	ext, name, err := parseDocURI(req.Params.URI)
	if err != nil {
		return nil, err
	}
	d, err := s.Set().ReadDoc(ext, name)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: d.MIMEType, Text: d.Text}}}, nil
}
