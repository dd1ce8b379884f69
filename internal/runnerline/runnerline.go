// Package runnerline reads a package runner's command line (npx, npm
// exec, pnpm dlx, bunx, yarn dlx; uvx and pipx run for PyPI) as an MCP
// server's manifest writes it: which package it fetches at each start,
// at which version, and what it runs of it. It says in words why a line
// cannot be pinned (a git or URL package, several packages, a shell
// string, an option whose effect is unknown).
//
// It imports nothing of gemkit's, so that the words a person reads
// before agreeing to an extension (internal/extension) and the pinning
// itself (internal/pkgrun) read a line the same way.
package runnerline

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// The ecosystems a runner fetches from.
const (
	NPM  = "npm"
	PyPI = "pypi"
)

// Invocation is a package runner's command line, read: which package it
// fetches and what it runs of it with which arguments.
type Invocation struct {
	// Runner names the runner as the person would type it: "npx", "npm
	// exec", "pnpm dlx", "bunx", "yarn dlx", "uvx", "pipx run".
	Runner string
	// Ecosystem is NPM or PyPI: the registry the package comes from.
	Ecosystem string
	// Package is the package's name; Spec the version, range or tag the
	// line asks for, "" for none (the newest: the "latest" tag).
	Package, Spec string
	// LatestTag: the line names the latest tag itself (pkg@latest),
	// which Spec leaves out as it is the same request. npm takes the
	// version that tag names whatever its engines, where for a bare
	// name, the range *, it takes the newest that runs on its node
	// (npm-pick-manifest; internal/pkgrun).
	LatestTag bool
	// Program is the program the line names apart from the package (npx
	// -p PKG PROGRAM, pnpm dlx --package PKG PROGRAM), "" for the
	// package's own.
	Program string
	// Args are the arguments the program gets.
	Args []string
}

// Request is the package as the line asks for it: name@spec, or the name
// alone for the newest.
func (in Invocation) Request() string {
	if in.Spec == "" {
		return in.Package
	}
	sep := "@"
	if in.Ecosystem == PyPI && !strings.ContainsAny(in.Spec[:1], "<>=!~") {
		sep = "=="
	} else if in.Ecosystem == PyPI {
		sep = ""
	}
	return in.Package + sep + in.Spec
}

// Line is the runner's command line as the manifest writes it, for
// words a person reads.
func (in Invocation) Line() string {
	parts := []string{in.Runner}
	if in.Program != "" {
		parts = append(parts, "--package", in.Request(), in.Program)
	} else {
		parts = append(parts, in.Request())
	}
	return strings.Join(append(parts, in.Args...), " ")
}

// UnpinnableError is a runner's line gemkit cannot pin, with why in
// words: a package that is not in a registry (a git repository, a
// tarball's URL, a folder), several packages at once, a shell command
// string, an option whose effect gemkit cannot reproduce.
type UnpinnableError struct {
	Runner, Why string
}

func (e *UnpinnableError) Error() string {
	return fmt.Sprintf("its %s command line cannot be pinned: %s", e.Runner, e.Why)
}

// runnerOf says which runner command and args start, and the arguments
// that follow the runner's own words ("npm exec" takes two).
func runnerOf(command string, args []string) (runner string, rest []string, ok bool) {
	base := strings.TrimSuffix(filepath.Base(command), ".cmd")
	first := func() string {
		if len(args) > 0 {
			return args[0]
		}
		return ""
	}
	switch base {
	case "npx":
		return "npx", args, true
	case "pnpx":
		return "pnpm dlx", args, true
	case "bunx":
		return "bunx", args, true
	case "uvx":
		return "uvx", args, true
	case "npm":
		// npm's own options may come before the command: npm --yes exec.
		i := 0
		for i < len(args) && strings.HasPrefix(args[i], "-") {
			i++
		}
		if i < len(args) && (args[i] == "exec" || args[i] == "x") {
			return "npm exec", append(append([]string{}, args[:i]...), args[i+1:]...), true
		}
	case "pnpm":
		i := 0
		for i < len(args) && strings.HasPrefix(args[i], "-") {
			i++
		}
		if i < len(args) && args[i] == "dlx" {
			return "pnpm dlx", append(append([]string{}, args[:i]...), args[i+1:]...), true
		}
	case "bun":
		if first() == "x" {
			return "bunx", args[1:], true
		}
	case "yarn":
		if first() == "dlx" {
			return "yarn dlx", args[1:], true
		}
	case "uv":
		if len(args) >= 2 && args[0] == "tool" && args[1] == "run" {
			return "uvx", args[2:], true
		}
	case "pipx":
		if first() == "run" {
			return "pipx run", args[1:], true
		}
	}
	return "", nil, false
}

// option is what a runner does with one of its options.
type option struct {
	// value: the option takes a value (--package pkg, --package=pkg).
	value bool
	// pkg: its value is the package to fetch (the line's program is then
	// the first word after the options).
	pkg bool
	// refuse, when set, is why gemkit cannot pin a line with the option.
	refuse string
}

// Why an option is refused, shared by the runners that have it.
const (
	shellWords    = "it runs a shell command string, whose programs gemkit cannot know before it runs"
	registryWords = "it names a registry of its own; gemkit installs from the registry of your npm configuration, the one you chose"
	noInstall     = "it asks the runner not to install the package, which then runs only if it is already installed where the runner looks, outside any consent"
	bunWords      = "it runs the package with Bun instead of Node; gemkit runs an npm package with Node"
	withWords     = "it installs more packages beside the one it runs; gemkit pins one package per server"
)

// options are each runner's options, by spelling. An option not listed
// is refused: gemkit does not know what the runner would do with it.
var options = map[string]map[string]option{
	// npm 7 on (npm exec, and npx, its shorthand): docs.npmjs.com,
	// "npm-exec" and "npx".
	"npm": {
		"-y": {}, "--yes": {}, "--no-yes": {refuse: noInstall}, "--no": {refuse: noInstall}, "--no-install": {refuse: noInstall},
		"-q": {}, "--quiet": {}, "-s": {}, "--silent": {}, "--loglevel": {value: true},
		"--prefer-online": {}, "--prefer-offline": {}, "--ignore-existing": {}, "--no-update-notifier": {},
		"-p": {value: true, pkg: true}, "--package": {value: true, pkg: true},
		"-c": {value: true, refuse: shellWords}, "--call": {value: true, refuse: shellWords},
		"--registry": {value: true, refuse: registryWords},
	},
	// pnpm 9 and 10: pnpm.io, "pnpm dlx".
	"pnpm dlx": {
		"--package": {value: true, pkg: true}, "--silent": {}, "-s": {}, "--reporter": {value: true},
		"-c": {refuse: shellWords}, "--shell-mode": {refuse: shellWords},
		"--allow-build": {value: true, refuse: "it lets the package run its install scripts; gemkit installs with scripts off, and runs them only when you allow it (--allow-install-scripts)"},
		"--registry":    {value: true, refuse: registryWords},
	},
	// Bun 1: bun.sh, "bunx".
	"bunx": {
		"-p": {value: true, pkg: true}, "--package": {value: true, pkg: true}, "--silent": {}, "--verbose": {},
		"--bun": {refuse: bunWords}, "--no-install": {refuse: noInstall},
	},
	// Yarn 2 on: yarnpkg.com, "yarn dlx".
	"yarn dlx": {
		"-p": {value: true, pkg: true}, "--package": {value: true, pkg: true}, "-q": {}, "--quiet": {},
	},
	// uv: docs.astral.sh, "uvx" (uv tool run).
	"uvx": {
		"--from": {value: true, pkg: true}, "-q": {}, "--quiet": {}, "--python": {value: true}, "-p": {value: true},
		"--with": {value: true, refuse: withWords}, "--index-url": {value: true, refuse: registryWords}, "--index": {value: true, refuse: registryWords},
	},
	// pipx: pipx.pypa.io, "pipx run".
	"pipx run": {
		"--spec": {value: true, pkg: true}, "-q": {}, "--quiet": {}, "--python": {value: true},
		"--index-url": {value: true, refuse: registryWords}, "-i": {value: true, refuse: registryWords},
	},
}

// Parse reads command and args (a stdio MCP server's, the manifest's
// variables substituted) as a package runner's line. ok is false for a
// command that is no package runner; err is an *UnpinnableError for a
// runner's line gemkit cannot pin.
func Parse(command string, args []string) (in Invocation, ok bool, err error) {
	runner, rest, ok := runnerOf(command, args)
	if !ok {
		return Invocation{}, false, nil
	}
	in = Invocation{Runner: runner, Ecosystem: NPM}
	table := options[runner]
	switch runner {
	case "npx", "npm exec":
		table = options["npm"]
	case "uvx", "pipx run":
		in.Ecosystem = PyPI
	}
	refuse := func(format string, a ...any) (Invocation, bool, error) {
		return Invocation{}, true, &UnpinnableError{Runner: runner, Why: fmt.Sprintf(format, a...)}
	}
	var pkg string
	var positional []string
	ended := false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		// npx and the others stop reading options at the first word that
		// is not one: what follows is the program's. npm exec reads its
		// options anywhere before "--".
		if ended || (len(positional) > 0 && runner != "npm exec") {
			positional = append(positional, a)
			continue
		}
		if a == "--" {
			ended = true
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, value, inline := strings.Cut(a, "=")
		opt, known := table[name]
		if !known {
			if len(positional) > 0 {
				return refuse("npm exec reads %s after the package as an option of its own, not the program's; put \"--\" before the program's arguments", a)
			}
			return refuse("gemkit does not know what %s does with the option %s", runner, a)
		}
		if opt.value && !inline {
			if i+1 >= len(rest) {
				return refuse("the option %s has no value", name)
			}
			i++
			value = rest[i]
		}
		if opt.refuse != "" {
			return refuse("%s: %s", name, opt.refuse)
		}
		if opt.pkg {
			if pkg != "" {
				return refuse("it names several packages (%s and %s); %s", pkg, value, withWords)
			}
			pkg = value
		}
	}
	if pkg == "" {
		if len(positional) == 0 {
			return refuse("it names no package")
		}
		pkg, positional = positional[0], positional[1:]
	} else {
		if len(positional) == 0 {
			return refuse("it names the package %s but no program of it to run", pkg)
		}
		in.Program, positional = positional[0], positional[1:]
	}
	if in.Ecosystem == PyPI {
		in.Package, in.Spec, err = splitPyPI(pkg)
	} else {
		in.Package, in.Spec, in.LatestTag, err = splitNPM(pkg)
	}
	if err != nil {
		return refuse("%v", err)
	}
	if in.Program != "" && (strings.ContainsAny(in.Program, `/\`) || strings.HasPrefix(in.Program, ".")) {
		return refuse("the program %q it runs is a path, not a program of the package", in.Program)
	}
	in.Args = positional
	return in, true, nil
}

// npmName is a package name the npm registry accepts: lower case,
// URL-safe, at most 214 characters, with an optional scope (npm's
// validate-npm-package-name).
var npmName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`) })

// registrySpec is a version, a range or a dist-tag: what npm resolves
// against the registry. A ':' or a '/' makes it a git, URL, file or
// alias spec, which is not.
var registrySpec = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9.^~<>=|*+ -]+$`) })

// splitNPM splits name[@spec] and refuses what the registry does not
// serve.
func splitNPM(s string) (name, spec string, latest bool, err error) {
	if strings.Contains(s, "://") || strings.HasPrefix(s, "git+") || strings.HasPrefix(s, "git@") {
		return "", "", false, fmt.Errorf("%s is a URL: the runner would fetch the package from there, not from a registry", s)
	}
	for _, p := range []string{"file:", "github:", "gitlab:", "bitbucket:", "gist:", "git:", "npm:", "link:", "workspace:", "http:", "https:"} {
		if strings.HasPrefix(s, p) {
			return "", "", false, fmt.Errorf("%s names a package outside the registry (%s)", s, strings.TrimSuffix(p, ":"))
		}
	}
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || strings.HasSuffix(s, ".tgz") || strings.HasSuffix(s, ".tar.gz") {
		return "", "", false, fmt.Errorf("%s is a folder or a file, not a package of the registry", s)
	}
	name = s
	if at := strings.Index(s[1:], "@") + 1; at > 0 {
		name, spec = s[:at], s[at+1:]
		if spec == "" {
			return "", "", false, fmt.Errorf("%s ends with \"@\" and no version", s)
		}
	}
	if !strings.HasPrefix(name, "@") && strings.Count(name, "/") == 1 {
		return "", "", false, fmt.Errorf("%s is GitHub's user/repository shorthand: the runner would fetch it from GitHub, not from a registry", s)
	}
	if len(name) > 214 || !npmName().MatchString(name) {
		return "", "", false, fmt.Errorf("%q is not the name of an npm package", name)
	}
	if spec == "latest" {
		spec, latest = "", true
	}
	if spec != "" && !registrySpec().MatchString(spec) {
		return "", "", false, fmt.Errorf("%s asks for %q, which is not a version, a range or a tag of the registry (a git, URL, file or alias spec)", s, spec)
	}
	return name, spec, latest, nil
}

// pypiName is a project name as PEP 508 allows it, with extras.
var pypiName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._, -]+\])?$`)
})

// splitPyPI splits a uvx or pipx spec: name, name@version (uvx),
// name==version or name<op>range.
func splitPyPI(s string) (name, spec string, err error) {
	if strings.Contains(s, "://") || strings.HasPrefix(s, "git+") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, ".whl") || strings.HasSuffix(s, ".tar.gz") || strings.Contains(s, " @ ") {
		return "", "", fmt.Errorf("%s is a URL, a file or a folder, not a project of PyPI", s)
	}
	name = s
	if i := strings.IndexAny(s, "@=<>!~"); i > 0 {
		name, spec = s[:i], strings.TrimPrefix(strings.TrimPrefix(s[i:], "@"), "==")
		if spec == "" {
			return "", "", fmt.Errorf("%s asks for no version after %q", s, s[i:])
		}
	}
	if !pypiName().MatchString(name) {
		return "", "", fmt.Errorf("%q is not the name of a PyPI project", name)
	}
	if spec == "latest" {
		spec = ""
	}
	return name, spec, nil
}

// PyPIError refuses a PyPI runner's line (uvx, pipx run): gemkit pins
// npm packages only so far.
type PyPIError struct{ Invocation }

func (e *PyPIError) Error() string {
	return fmt.Sprintf("%s fetches %s from PyPI at each start; gemkit pins npm packages only so far, so it does not start this server rather than let it fetch code nobody agreed to (docs/extensions-sandbox.md, \"Package runners, pinned\")", e.Runner, e.Request())
}
