// Package progsearch finds the programs gemkit starts in its sandbox,
// and what they need to run: a program on the part of PATH a sandboxed
// process may be started from (Look), the interpreter a script names
// (Interpreter), the installation a program belongs to (Prefix). The
// profiles of every kind of sandboxed process (internal/sandbox's
// servers' and language servers', internal/exthook's hooks',
// internal/pkgrun's installs) find their programs here, so that none
// is taken from a folder a tool may write.
package progsearch

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
)

// Look finds a program on the part of path a sandboxed process may be
// started from (permission.SearchPath): never in a distrusted folder
// (the workspace, a virtualenv). A full path, which only the person's
// own config names (a language server's "command"), is taken as it is
// when a program lies there; sandbox.NewServerProfile still refuses one
// in a distrusted folder, with words.
func Look(path string, distrusted []string) func(string) (string, error) {
	dirs, dropped := permission.SearchPath(path, distrusted)
	return func(file string) (string, error) {
		if filepath.IsAbs(file) {
			if runnable(file) {
				return file, nil
			}
			return "", &NotFoundError{Program: file}
		}
		if strings.ContainsRune(file, filepath.Separator) {
			return "", fmt.Errorf("%s: a server's command here is a name found on PATH, or a full path", file)
		}
		for _, d := range dirs {
			if p := filepath.Join(d, file); runnable(p) {
				return p, nil
			}
		}
		nf := &NotFoundError{Program: file}
		for _, d := range dropped {
			if p := filepath.Join(d, file); runnable(p) {
				nf.Skipped = p
				break
			}
		}
		return "", nf
	}
}

// runnable reports whether p is a file (not a folder) someone may run.
func runnable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// NotFoundError is a server's program Look did not find where a
// server may be started from: the person installs it, or puts it on
// PATH.
type NotFoundError struct {
	Program string // as the server's command names it
	// Skipped is where PATH has it in a folder a tool may write (the
	// workspace, a virtualenv), which no server is started from; "" when
	// PATH has it nowhere.
	Skipped string
}

func (e *NotFoundError) Error() string {
	if filepath.IsAbs(e.Program) {
		return e.Program + ": no program there"
	}
	if e.Skipped != "" {
		return e.Program + ": on PATH only as " + e.Skipped + ", in the workspace or a virtualenv, whose folders are not searched"
	}
	return e.Program + ": not found on PATH (the workspace's and a virtualenv's folders are not searched)"
}

// Interpreter is the program a script's "#!" line names ("node" of
// "#!/usr/bin/env node"), "" for a binary.
func Interpreter(path string) string {
	// Without blocking: a FIFO (or a link to one) at path, which a tool
	// that may write the workspace can make, would hold an open forever,
	// and only a regular file is a script.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	line, err := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" {
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				return f
			}
		}
		return ""
	}
	return fields[0]
}

// InterpreterAt is the real path of the program that runs the script
// at path: its "#!" line's (Interpreter), found by look when the line
// names it by name ("#!/usr/bin/env node"); "" for a binary, or an
// interpreter look does not find. A profile opens its installation
// (Prefix) to the sandboxed process, as the script's own.
func InterpreterAt(path string, look func(string) (string, error)) string {
	in := Interpreter(path)
	if in != "" && !filepath.IsAbs(in) {
		p, err := look(in)
		if err != nil {
			return ""
		}
		in = p
	}
	if in == "" {
		return ""
	}
	return fsutil.RealPath(in)
}

// Prefix is the installation a program belongs to: the folder above its
// bin folder (/usr/local of /usr/local/bin/node), else its own folder.
func Prefix(real string) string {
	dir := filepath.Dir(real)
	// pyenv's and rbenv's shims run the version manager's own scripts,
	// which find the interpreter below the same root.
	if b := filepath.Base(dir); b == "bin" || b == "shims" {
		return filepath.Dir(dir)
	}
	return dir
}
