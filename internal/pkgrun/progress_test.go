package pkgrun

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// TestProgressNotTerminal: written to a log rather than a terminal, the
// progress tells the resolution (npm's metadata requests, which come
// before any tarball) as it goes, then the tarballs, a line per
// progressEvery of each, not a line per request. The lines are npm's
// own at --loglevel=http ("npm http fetch GET 200 URL 14ms (cache
// miss)", npm's make-fetch-happen logging).
func TestProgressNotTerminal(t *testing.T) {
	tests := []struct {
		name     string
		metadata int
		tarballs int
		want     []string
		wantN    int
	}{
		{"one package", 1, 1, []string{"  resolving: 1 package's metadata fetched so far (the last: pkg0)", "  fetched 0 bytes so far (1 package's metadata, 1 tarball; the last: pkg0-1.0.0.tgz)"}, 2},
		{"many packages", 60, 60, []string{"  resolving: 25 packages' metadata fetched so far (the last: pkg24)", "  resolving: 50 packages' metadata fetched so far (the last: pkg49)", "  fetched 0 bytes so far (60 packages' metadata, 50 tarballs; the last: pkg49-1.0.0.tgz)"}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := &progress{w: &out, received: new(atomic.Int64)}
			for i := range tt.metadata {
				fmt.Fprintf(p, "npm http fetch GET 200 https://registry.example/pkg%d 14ms (cache miss)\n", i)
			}
			for i := range tt.tarballs {
				fmt.Fprintf(p, "npm http fetch GET 200 https://registry.example/pkg%d/-/pkg%d-1.0.0.tgz 3ms (cache miss)\n", i, i)
			}
			p.flush()
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != tt.wantN {
				t.Errorf("%d lines, want %d:\n%s", len(lines), tt.wantN, out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w+"\n") {
					t.Errorf("no line %q in:\n%s", w, out.String())
				}
			}
		})
	}
}
