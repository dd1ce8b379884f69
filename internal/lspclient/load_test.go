package lspclient

import "testing"

func TestLoadErrorText(t *testing.T) {
	for _, tt := range []struct{ msg, want string }{
		// gopls v0.23.0, on go.mod, a module missing with GOPROXY=off.
		{"packages.Load error: err: exit status 1: stderr: go: github.com/cpuguy83/go-md2man/v2@v2.0.6: module lookup disabled by GOPROXY=off\n",
			"go: github.com/cpuguy83/go-md2man/v2@v2.0.6: module lookup disabled by GOPROXY=off"},
		// Its environment naming no module cache.
		{"packages.Load error: err: exit status 1: stderr: go: module cache not found: neither GOMODCACHE nor GOPATH is set",
			"go: module cache not found: neither GOMODCACHE nor GOPATH is set"},
		{"go.sum is out of sync with go.mod. Please update it by applying the quick fix.",
			"go.sum is out of sync with go.mod. Please update it by applying the quick fix."},
	} {
		if got := loadErrorText(tt.msg); got != tt.want {
			t.Errorf("loadErrorText(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}
