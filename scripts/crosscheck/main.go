// Command crosscheck type-checks the module's packages as they build for
// other systems, from source, without compiling them: the packages must
// keep building for the systems the client and the manager support
// (the sandbox refuses to run tools there), and for Linux on CPUs of
// 32 bits, whose ints and stat fields are narrower; CI, which runs on
// 64-bit Linux, checks that they do.
//
//	go run ./scripts/crosscheck -tests darwin windows freebsd linux/386 linux/arm
//
// With -tests it checks each package's tests too, as its test binary
// builds them (the package with its _test.go files, and its external
// test package).
//
// A system alone is checked for this machine's CPU (GOARCH); GOOS/GOARCH
// names both.
//
// It checks what a build for GOOS checks of Go code, with go/types, the
// type checker of the standard library, over each package's files for
// that system (go list picks them, build constraints and all) and over
// everything they import, the standard library included. A build
// compiles all of that to machine code first: on a fresh machine, with
// nothing of those systems in Go's build cache, a build of ./... for
// darwin took 99 CPU-s where this takes 4. What a build would find and
// this does not is the linker's: a function declared without a body
// whose assembly is missing, or a //go:linkname to nothing. The module
// has neither (no assembly, no linkname).
//
// As a build for another system does by default, it checks the
// packages without cgo.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

func main() {
	tests := flag.Bool("tests", false, "check the packages' tests too")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: crosscheck [-tests] GOOS[/GOARCH]... (type-checks ./... for each system)")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, arg := range flag.Args() {
		goos, goarch, ok := strings.Cut(arg, "/")
		if !ok {
			goarch = runtime.GOARCH
		}
		n, errs := check(goos, goarch, *tests, ".", "./...")
		for _, e := range errs {
			fmt.Fprintf(os.Stderr, "%s/%s: %v\n", goos, goarch, e)
		}
		if len(errs) > 0 {
			failed = true
			continue
		}
		fmt.Printf("crosscheck: %s/%s: %d packages type-check\n", goos, goarch, n)
	}
	if failed {
		os.Exit(1)
	}
}

// listed is what go list says of a package (go help list).
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string // after ImportMap
	ImportMap  map[string]string
	Standard   bool
	DepOnly    bool
	Module     *struct{ GoVersion string }
	Error      *struct{ Err string }
}

// check type-checks the packages patterns name, run in dir, for goos on
// goarch, and everything they import; with tests, each package also as
// its test binary builds it (go list -test: the package with its
// _test.go files, and its external test package). It returns how many
// packages it checked and the errors found (go list's, and the type
// checker's).
func check(goos, goarch string, tests bool, dir string, patterns ...string) (int, []error) {
	args := []string{"list", "-e", "-deps", "-json=ImportPath,Dir,GoFiles,Imports,ImportMap,Standard,DepOnly,Module,Error"}
	if tests {
		args = append(args, "-test")
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, []error{fmt.Errorf("go list: %v\n%s", err, stderr.String())}
	}
	fset := token.NewFileSet()
	sizes := types.SizesFor("gc", goarch)
	if sizes == nil {
		return 0, []error{fmt.Errorf("no sizes known for GOARCH=%s", goarch)}
	}
	checked := map[string]*types.Package{"unsafe": types.Unsafe}
	var errs []error
	n, skipped := 0, 0
	// go list -deps lists each package after everything it imports.
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return n, append(errs, fmt.Errorf("go list's output: %w", err))
		}
		// The test binary's generated main is go test's, not the
		// module's (go list names a file it has not written).
		if p.ImportPath == "unsafe" || strings.HasSuffix(p.ImportPath, ".test") {
			continue
		}
		// A package importing one that failed is not checked: its
		// errors would only repeat the first one's.
		if slices.ContainsFunc(p.Imports, func(q string) bool { return checked[q] == nil }) {
			skipped++
			continue
		}
		if p.Error != nil {
			errs = append(errs, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err))
			continue
		}
		files := make([]*ast.File, 0, len(p.GoFiles))
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			files = append(files, f)
		}
		conf := types.Config{
			Importer: importer(func(path string) (*types.Package, error) {
				if q, ok := p.ImportMap[path]; ok {
					path = q
				}
				if pkg := checked[path]; pkg != nil {
					return pkg, nil
				}
				return nil, fmt.Errorf("%s was not checked (or failed)", path)
			}),
			Sizes: sizes,
			Error: func(err error) { errs = append(errs, err) },
		}
		if p.Module != nil && p.Module.GoVersion != "" {
			conf.GoVersion = "go" + p.Module.GoVersion
		}
		pkg, err := conf.Check(p.ImportPath, fset, files, nil)
		if err != nil {
			continue // reported through conf.Error
		}
		checked[p.ImportPath] = pkg
		n++
	}
	if skipped > 0 {
		errs = append(errs, fmt.Errorf("%d packages importing those above were not checked", skipped))
	}
	return n, errs
}

type importer func(path string) (*types.Package, error)

func (f importer) Import(path string) (*types.Package, error) { return f(path) }
