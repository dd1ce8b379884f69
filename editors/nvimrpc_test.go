package editors_test

import "github.com/gemkit/gemkit/internal/nvimrpc"

// nvimRPC is a connection to the Neovim under test (internal/nvimrpc).
type nvimRPC struct{ *nvimrpc.Client }

func dialNvim(path string) (*nvimRPC, error) {
	c, err := nvimrpc.Dial(path)
	if err != nil {
		return nil, err
	}
	return &nvimRPC{c}, nil
}

// call runs an API method and returns its result.
func (r *nvimRPC) call(method string, args ...any) (any, error) { return r.Call(method, args...) }
