package sandboxtest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/ide"
)

// Places is a person's environment whose folders all lie under one
// temporary root, for the tests that hold each kind of sandboxed process's
// profile (a tool's, a hook's, a server's, an installer's, a language
// server's) to what it was when the profiles were built apart: the same
// environment gives the same profile, written as Text for a golden file.
type Places struct {
	// Root is the temporary folder everything below lies in.
	Root string
	// Environ is the person's environment: HOME, PATH (Root/opt/bin,
	// which holds a program named bash), XDG_CONFIG_HOME, and the three temporary folders
	// TMPDIR, TMP and TEMP, each a folder of its own.
	Environ []string
	// Ports are the companions' ports Own probes, by where their
	// discovery or lock file lies.
	Ports map[int]string
}

// NewPlaces makes the folders of Places, and points this process's
// TMPDIR and XDG_RUNTIME_DIR inside Root too (t.Setenv), so that
// os.TempDir's places are Root's. It writes an IDE companion's discovery
// file in each temporary folder and a Claude Code lock file in the home
// folder, each with a port of its own (Ports).
func NewPlaces(t *testing.T) Places {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := Places{Root: root, Ports: map[int]string{}}
	dir := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	write := func(path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bin := dir(filepath.Join("opt", "bin"))
	if err := os.WriteFile(filepath.Join(bin, "bash"), []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.Environ = []string{"HOME=" + dir("home"), "PATH=" + bin, "XDG_CONFIG_HOME=" + dir("config")}
	port := 41001
	for _, v := range []string{"TMPDIR", "TMP", "TEMP"} {
		d := dir(strings.ToLower(v))
		p.Environ = append(p.Environ, v+"="+d)
		write(filepath.Join(d, "gemini", "ide", "gemini-ide-server-1-"+strconv.Itoa(port)+".json"))
		p.Ports[port] = "the person's $" + v
		port++
	}
	own := dir("own-tmp")
	t.Setenv("TMPDIR", own)
	t.Setenv("XDG_RUNTIME_DIR", dir("run"))
	write(filepath.Join(own, "gemini", "ide", "gemini-ide-server-1-"+strconv.Itoa(port)+".json"))
	p.Ports[port] = "gemkit's os.TempDir()"
	port++
	write(filepath.Join(ide.AgentClaude.DefaultFolder(filepath.Join(root, "home")), ide.AgentClaude.LockDir, strconv.Itoa(port)+".lock"))
	p.Ports[port] = "the person's ~/.claude/ide"
	return p
}

// Folder makes the folder name under Root (0755) and returns it.
func (p Places) Folder(t *testing.T, name string) string {
	t.Helper()
	d := filepath.Join(p.Root, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// Golden is v's Text, then what own says of Ports (Own): what a
// profile's golden file holds.
func (p Places) Golden(v any, own func(port int) bool) []byte {
	return []byte(p.Text(v) + p.Own(own))
}

// Getenv reads Environ.
func (p Places) Getenv(k string) string {
	for i := len(p.Environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(p.Environ[i], k+"="); ok {
			return v
		}
	}
	return ""
}

// Own says which of Ports own says are gemkit's own servers (what a
// profile's OwnServer refuses), one line each.
func (p Places) Own(own func(port int) bool) string {
	var b strings.Builder
	for port := 41001; port < 41001+len(p.Ports); port++ {
		fmt.Fprintf(&b, "own server %d (%s): %v\n", port, p.Ports[port], own != nil && own(port))
	}
	return b.String()
}

// fixedClosed are the closed places that no environment moves.
var fixedClosed = map[string]bool{"/tmp/gemini/ide": true, "/tmp/gemkit-$UID": true, "/run/user/$UID/gemkit": true}

// uidInPath is this user's uid where gemkit's folders name it.
var uidInPath = regexp.MustCompile(`(/run/user/|gemkit-)` + strconv.Itoa(os.Getuid()) + `\b`)

// Text writes v, a struct (a sandbox policy, a profile), one exported
// field a line, with Root written $Root and this user's uid $UID; func
// fields and empty ones are left out. Of the closed folders (a field
// named Protected or Closed) only those in Root and the fixed places of
// /tmp and /run are kept: the rest (the account's home folder, the
// records of the servers running on this machine) differ between
// machines and users, and are the same builder's whatever the kind.
func (p Places) Text(v any) string {
	var b strings.Builder
	p.text(&b, "", reflect.Indirect(reflect.ValueOf(v)))
	return b.String()
}

// text writes the fields of the struct rv, each name after prefix; a
// struct field's own fields are written under its name.
func (p Places) text(b *strings.Builder, prefix string, rv reflect.Value) {
	for i := 0; i < rv.NumField(); i++ {
		f, fv := rv.Type().Field(i), rv.Field(i)
		if !f.IsExported() || f.Type.Kind() == reflect.Func || fv.IsZero() {
			continue
		}
		switch s, ok := fv.Interface().([]string); {
		case f.Anonymous:
			p.text(b, prefix, reflect.Indirect(fv))
		case reflect.Indirect(fv).Kind() == reflect.Struct:
			p.text(b, prefix+f.Name+".", reflect.Indirect(fv))
		case ok:
			for _, e := range s {
				e = p.norm(e)
				if (f.Name == "Protected" || f.Name == "Closed") && !strings.HasPrefix(e, "$Root") && !fixedClosed[e] {
					continue
				}
				fmt.Fprintf(b, "%s%s: %s\n", prefix, f.Name, e)
			}
		default:
			fmt.Fprintf(b, "%s%s: %s\n", prefix, f.Name, p.norm(fmt.Sprintf("%+v", fv.Interface())))
		}
	}
}

func (p Places) norm(s string) string {
	return uidInPath.ReplaceAllString(strings.ReplaceAll(s, p.Root, "$Root"), "${1}$$UID")
}
