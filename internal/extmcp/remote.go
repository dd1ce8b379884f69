package extmcp

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gemkit/gemkit/internal/mcpclient"
)

// A remote server (url, httpUrl) is proxied as it is: gemkit connects to
// it itself, from its own process, outside the sandbox (there is no
// process of the extension's to confine), sending the manifest's
// headers only: a header value's $NAME or ${NAME} takes a declared
// setting's value, never the person's environment, which Gemini CLI
// would expand there. No sign-in: a server that asks for OAuth fails to
// connect, with its words.

// connect connects to a remote server, bounded by its start timeout.
func (s *server) connect(ctx context.Context) (*running, error) {
	header := http.Header{}
	for k, v := range s.spec.Headers {
		header.Set(k, expand(v, s.spec.Settings))
	}
	r := &running{exited: make(chan struct{}), done: make(chan struct{})}
	// The SSE transport's event stream lives on the context it connects
	// with: the connection's own, which the start timeout ends only
	// while connecting.
	life, end := context.WithCancel(context.WithoutCancel(ctx))
	stopped := context.AfterFunc(ctx, end)
	timer := time.AfterFunc(s.startTimeout(), end)
	// No client timeout: the event streams stay open as long as the
	// connection.
	hc := &http.Client{}
	opts := s.clientOptions(r)
	var client *mcpclient.Client
	var err error
	switch s.spec.Transport {
	case TransportSSE:
		client, err = mcpclient.SSE(life, s.spec.URL, hc, header, opts)
	case TransportHTTP:
		client, err = mcpclient.HTTP(life, s.spec.URL, hc, header, opts)
	default:
		client, err = mcpclient.HTTP(life, s.spec.URL, hc, header, opts)
		if err != nil && life.Err() == nil {
			client, err = mcpclient.SSE(life, s.spec.URL, hc, header, opts)
		}
	}
	timedOut := !timer.Stop()
	stopped()
	if err != nil {
		end()
		if timedOut {
			return nil, fmt.Errorf("%s did not answer MCP's initialize at %s within %s", s.who(), Printable(s.spec.URL), s.startTimeout())
		}
		return nil, fmt.Errorf("%s could not be reached at %s: %s", s.who(), Printable(s.spec.URL), oneLine(err.Error()))
	}
	r.client = client
	r.kill = func() {
		_ = client.Close()
		end()
	}
	r.wait = client.Wait
	go s.watch(r)
	s.m.log.Debug("MCP server connected", "extension", s.spec.Extension, "server", s.spec.Server, "url", s.spec.URL)
	return r, nil
}
