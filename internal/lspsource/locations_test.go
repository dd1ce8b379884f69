package lspsource

import (
	"context"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
)

// TestLocationsOnlyCarriedMethods: the Locator asks nothing the editors'
// plugins and gemkit's own servers refuse to carry (a request that
// changes something, as a rename does), before asking any client.
func TestLocationsOnlyCarriedMethods(t *testing.T) {
	s := New(nil, nil)
	_, err := s.Locations(context.Background(), "textDocument/rename", codeintel.DocPos{Path: "/w/main.go"})
	if err == nil || !strings.Contains(err.Error(), "textDocument/rename is not a request the language clients carry") {
		t.Errorf("Locations of textDocument/rename: %v", err)
	}
}
