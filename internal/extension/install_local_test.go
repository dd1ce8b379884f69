package extension

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A store that sits inside the source, under a folder whose name merely
// starts with two dots, is still inside it: installing the source would
// copy the extensions folder into itself.
func TestInstallRefusesSourceHoldingTheStore(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{ManifestFile: manifestJSON("greeter", "1.0.0", "")})
	home := filepath.Join(src, "..gemini-home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	s := OpenStore(home).WithWorkspace(src)
	_, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: yes})
	if err == nil || !strings.Contains(err.Error(), "contains the extensions folder itself") {
		t.Fatalf("install of a source holding the store: %v; want the refusal", err)
	}
}
