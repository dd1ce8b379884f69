package extension

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copiedTree is an extension folder as Gemini CLI's install leaves it:
// npm's relative .bin links made absolute into the folder it copied,
// from, which may be gone (a git source's temporary clone); and one link
// of the author's that names nothing the extension holds.
func copiedTree(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		ManifestFile:                     `{"name":"copied","version":"1.0.0"}`,
		"node_modules/tsc/bin/tsc":       "#!/usr/bin/env node\n",
		"node_modules/foo/cli.js":        "#!/usr/bin/env node\n",
		"node_modules/.bin/tsc":          "->" + filepath.Join(from, "node_modules/tsc/bin/tsc"),
		"node_modules/.bin/foo":          "->" + filepath.Join(from, "node_modules/foo/cli.js"),
		"node_modules/.bin/authors-tool": "->/usr/local/bin/authors-tool",
	})
	return dir
}

// TestCopiedLinks: the links a copy made absolute are found, from the
// folder the install metadata names or, without it, from the links
// themselves; made relative again as the copy meant, they name the
// extension's own files, and consent can then bind them. A link of the
// author's is left as it is.
func TestCopiedLinks(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src", "ext")
	for _, c := range []struct{ name, from, given string }{
		{"local source", src, src},
		{"a git clone gone", "/tmp/gemini-extensionAbC123", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copiedTree(t, c.from)
			content, err := ReadContent(dir)
			if err != nil {
				t.Fatal(err)
			}
			links, err := CopiedLinks(dir, content, c.given)
			if err != nil {
				t.Fatal(err)
			}
			if len(links) != 2 || links[0].Path != "node_modules/.bin/foo" || links[0].Relative() != "../foo/cli.js" ||
				links[1].Path != "node_modules/.bin/tsc" || links[1].Relative() != "../tsc/bin/tsc" || links[0].From != c.from {
				t.Fatalf("copied links: %+v", links)
			}
			words := CopiedLinksWords(links)
			if !strings.HasPrefix(words, "2 links of the extension lead back into the folder it was copied from, "+c.from+" (node_modules/.bin/foo -> "+filepath.Join(c.from, "node_modules/foo/cli.js")) {
				t.Errorf("words: %s", words)
			}
			// With the folder copied among those others write, consent
			// cannot bind the links, and only because of them.
			bind := content.Bindable(dir, []string{filepath.Dir(c.from)})
			if bind == nil || WithoutCopied(bind, links) != nil {
				t.Errorf("Bindable %v, without the copied links %v", bind, WithoutCopied(bind, links))
			}
			if err := RelinkCopied(dir, links); err != nil {
				t.Fatal(err)
			}
			for _, l := range links {
				if target, err := os.Readlink(filepath.Join(dir, l.Path)); err != nil || target != l.Relative() {
					t.Errorf("%s -> %q, %v", l.Path, target, err)
				}
			}
			if target, _ := os.Readlink(filepath.Join(dir, "node_modules/.bin/authors-tool")); target != "/usr/local/bin/authors-tool" {
				t.Errorf("the author's link was changed: %s", target)
			}
			after, err := ReadContent(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := after.Bindable(dir, []string{filepath.Dir(c.from)}); err != nil {
				t.Errorf("after: %v", err)
			}
		})
	}
}

// TestRelinkCopiedChanged: a link changed since it was read is left as it
// is, and said.
func TestRelinkCopiedChanged(t *testing.T) {
	src := "/home/me/src/ext"
	dir := copiedTree(t, src)
	content, err := ReadContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	links, err := CopiedLinks(dir, content, src)
	if err != nil || len(links) != 2 {
		t.Fatalf("%+v %v", links, err)
	}
	p := filepath.Join(dir, "node_modules/.bin/tsc")
	os.Remove(p)
	os.Symlink("/elsewhere", p)
	err = RelinkCopied(dir, links)
	if err == nil || !strings.Contains(err.Error(), "node_modules/.bin/tsc changed since it was read") {
		t.Errorf("RelinkCopied: %v", err)
	}
	if target, _ := os.Readlink(p); target != "/elsewhere" {
		t.Errorf("a changed link was replaced: %s", target)
	}
}
