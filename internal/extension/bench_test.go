package extension

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// benchStore installs count extensions from the "tools" template.
func benchStore(b *testing.B, count int) *Store {
	b.Helper()
	tmp := b.TempDir()
	st := OpenStore(filepath.Join(tmp, "home")).WithWorkspace(tmp)
	for i := range count {
		src := filepath.Join(tmp, "src", fmt.Sprintf("bench-ext-%03d", i))
		if _, err := CreateFromTemplate(src, "tools"); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Install(context.Background(), InstallRequest{Source: src, Consent: yes}); err != nil {
			b.Fatal(err)
		}
		if i%3 == 0 {
			if err := st.Disable(fmt.Sprintf("bench-ext-%03d", i), ScopeUser); err != nil {
				b.Fatal(err)
			}
		}
	}
	return st
}

// BenchmarkList measures loading 200 installed extensions with their
// enablement, the work of `gemkit extensions list` inside the process.
func BenchmarkList(b *testing.B) {
	st := benchStore(b, 200)
	b.ResetTimer()
	for b.Loop() {
		list, err := st.List()
		if err != nil || len(list) != 200 {
			b.Fatal(len(list), err)
		}
		enabled, err := st.Enablements()
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range list {
			enabled(in.Name)
		}
	}
}

// BenchmarkGet measures finding and loading one of 200 extensions, the
// work of `gemkit extensions describe`.
func BenchmarkGet(b *testing.B) {
	st := benchStore(b, 200)
	b.ResetTimer()
	for b.Loop() {
		if _, err := st.Get("bench-ext-100"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseManifest measures reading the "tools" template's
// manifest, most of the CPU time `list` spends per extension.
func BenchmarkParseManifest(b *testing.B) {
	data, err := templateFS.ReadFile("templates/tools/gemini-extension.json")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := ParseManifest(data); err != nil {
			b.Fatal(err)
		}
	}
}
