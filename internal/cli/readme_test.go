//go:build unix

package cli

// TestREADMECommands runs, against the built binary, every command of
// the ```sh blocks of README.md, docs/first-ten-minutes.md and
// docs/extensions-write.md (walkthroughs), each block in a private home, temporary
// directory and workspace, so that a new user's first commands work as
// written. TestHelpExamples does the same for the `gemkit` lines of each
// command's Example.
//
// The rules, which README.md points to in a comment at its top:
//
//   - Each line of a ```sh block is one command; `# …` starts a comment; a
//     line ending in `\` continues on the next. `cd DIR` changes the folder
//     of the block's later commands (created when missing; `~` is the
//     private home) and `export K=V` their environment (V as the shell
//     expands it). Commands starting with `go ` or `./`, after any
//     `K=V` assignments, run in the repository. `go` finds no module
//     proxy (GOPROXY=off): only what builds from this clone works.
//   - A command must exit 0 within commandTimeout, with stdin open and
//     silent (as a person who has not typed yet).
//   - An HTML comment right before a block steers it, with directives
//     separated by `;`:
//     `readme-test: skip: PREFIX (why)` does not run the commands that
//     start with PREFIX;
//     `readme-test: skip-block (why)` runs none of the block;
//     `readme-test: server: PREFIX` says the commands that start with
//     PREFIX serve until stopped: such a command passes if it is still
//     running, without having printed an error, after serverGrace;
//     `readme-test: companion` runs the block beside a `gemkit ide serve`
//     of its workspace, reached through the variables it prints, whose
//     terminal front-end accepts every diff;
//     `readme-test: files: A B` creates files A and B (a line of Go each)
//     in the workspace first;
//     `readme-test: model` points the Gemini API at a scripted model
//     server of the test (GOOGLE_GEMINI_BASE_URL), which answers in words;
//     `readme-test: gemini` puts the pinned Gemini CLI of interop/ on PATH;
//     `readme-test: fresh` runs the block without the test's gemkit on
//     PATH, as on a machine where it is not installed yet: each later
//     `gemkit` runs what the block itself installed, or fails;
//     `readme-test: also-after: COMMAND` runs the block a second time,
//     in a new private world where COMMAND ran first in the workspace: the
//     state an earlier walkthrough leaves a reader in.

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

const (
	// commandTimeout bounds each command that should exit: generous,
	// since the Gemini CLI starts slowly on a loaded machine, and
	// docs/first-ten-minutes.md's `CGO_ENABLED=0 go install ./cmd/gemkit`
	// compiled all of gemkit afresh when the tests' gemkit was built
	// with cgo (209 s at a load of 15 with empty caches, as that page
	// says): at 90 s it failed a CI run on a fresh clone at load 25-35
	// ("did not finish within 1m30s"). It says only that a command does
	// not hang.
	commandTimeout = 5 * time.Minute
	// serverGrace is how long a server must keep running.
	serverGrace = 3 * time.Second
)

// docBlock is one ```sh block and the directives before it.
type docBlock struct {
	line      int // of the opening fence
	commands  []string
	skip      []string // command prefixes not run
	servers   []string // command prefixes that serve until stopped
	skipBlock bool
	companion bool
	model     bool
	gemini    bool
	fresh     bool
	files     []string
	alsoAfter string // a command after which the block runs again
}

var directiveRe = regexp.MustCompile(`<!--\s*readme-test:(.*?)-->`)

// parseBlocks returns the ```sh blocks of a Markdown text with the
// directives of the HTML comment right before each.
func parseBlocks(text string) []docBlock {
	var blocks []docBlock
	lines := strings.Split(text, "\n")
	pending := ""
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if m := directiveRe.FindStringSubmatch(l); m != nil {
			pending += ";" + m[1]
			continue
		}
		if l != "```sh" && l != "```bash" && l != "```shell" {
			if l != "" {
				pending = ""
			}
			continue
		}
		b := docBlock{line: i + 1}
		for _, d := range strings.Split(pending, ";") {
			d = strings.TrimSpace(d)
			prefix := func(name string) string {
				p := strings.TrimSpace(strings.TrimPrefix(d, name))
				if j := strings.Index(p, " ("); j >= 0 {
					p = p[:j]
				}
				return p
			}
			switch {
			case strings.HasPrefix(d, "skip-block"):
				b.skipBlock = true
			case strings.HasPrefix(d, "skip:"):
				b.skip = append(b.skip, prefix("skip:"))
			case strings.HasPrefix(d, "server:"):
				b.servers = append(b.servers, prefix("server:"))
			case d == "companion":
				b.companion = true
			case d == "model":
				b.model = true
			case d == "gemini":
				b.gemini = true
			case strings.HasPrefix(d, "fresh"):
				b.fresh = true
			case strings.HasPrefix(d, "also-after:"):
				b.alsoAfter = prefix("also-after:")
			case strings.HasPrefix(d, "files:"):
				b.files = strings.Fields(strings.TrimPrefix(d, "files:"))
			}
		}
		pending = ""
		cur := ""
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			cur += lines[i]
			if strings.HasSuffix(cur, `\`) {
				cur = strings.TrimSuffix(cur, `\`) + " "
				continue
			}
			if c := stripComment(cur); c != "" {
				b.commands = append(b.commands, c)
			}
			cur = ""
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// stripComment drops a shell comment: a # at the start or after a blank,
// outside quotes.
func stripComment(line string) string {
	inS, inD := false, false
	for i, r := range line {
		switch {
		case r == '\'' && !inD:
			inS = !inS
		case r == '"' && !inS:
			inD = !inD
		case r == '#' && !inS && !inD && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimSpace(line[:i])
		}
	}
	return strings.TrimSpace(line)
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// docEnv is the private world one block's commands run in.
type docEnv struct {
	t    *testing.T
	bin  string
	home string
	ws   string
	env  []string
}

func newDocEnv(t *testing.T) *docEnv {
	bin := gemkittest.Gemkit(t)
	home, tmp, ws := t.TempDir(), t.TempDir(), t.TempDir()
	path := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	env := []string{"HOME=" + home, "TMPDIR=" + tmp, "PATH=" + path, "LANG=C.UTF-8", "NO_COLOR=1", "EDITOR=true",
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		// Not a container companion, wherever the test runs.
		"SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22",
		// A command that fetches gemkit from the network fails, as it
		// would for a user: the module is not published.
		"GOPROXY=off",
		// go builds without cgo, as on the fresh Debian machine README.md
		// speaks of, which has no C compiler, and as gemkit ships
		// (gemkittest.Gemkit builds it so too): `go run ./cmd/gemkit`
		// then takes the packages the tests' gemkit compiled, rather
		// than compile all of them again with cgo.
		"CGO_ENABLED=0",
		// A person's git knows who commits (the private home has no
		// ~/.gitconfig).
		"GIT_AUTHOR_NAME=A person", "GIT_AUTHOR_EMAIL=person@example.com",
		"GIT_COMMITTER_NAME=A person", "GIT_COMMITTER_EMAIL=person@example.com"}
	if gocache, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output(); err == nil {
		// `go run` from the README keeps the machine's build caches.
		if f := strings.Fields(string(gocache)); len(f) == 2 {
			env = append(env, "GOCACHE="+f[0], "GOMODCACHE="+f[1])
		}
	}
	return &docEnv{t: t, bin: bin, home: home, ws: ws, env: env}
}

// run runs one command in dir and says what went wrong, "" when it passed.
func (e *docEnv) run(dir, command string, server bool) string {
	limit := commandTimeout
	if server {
		limit = serverGrace
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = e.env
	// The command and what it starts are one process group, stopped
	// together at the limit.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	// An open stdin that never sends: a server waits, a prompt waits.
	pr, pw, err := os.Pipe()
	if err != nil {
		e.t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	cmd.Stdin = pr
	var out gemkittest.Output
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	switch {
	case ctx.Err() != nil && server:
		if strings.Contains(strings.ToLower(out.String()), "error") {
			return "was serving but had printed an error:\n" + out.String()
		}
		return ""
	case ctx.Err() != nil:
		return "did not finish within " + limit.String() + ":\n" + out.String()
	case server:
		return "should serve until stopped but ended (" + errText(err) + "):\n" + out.String()
	case err != nil:
		return err.Error() + ":\n" + out.String()
	}
	return ""
}

func errText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// startCompanion runs `gemkit ide serve --print-env` for the workspace,
// accepts each diff it shows, and adds the variables it prints to e.env.
func (e *docEnv) startCompanion() {
	cmd := exec.Command(e.bin, "ide", "serve", "--print-env", "--workspace", e.ws)
	cmd.Dir = e.ws
	cmd.Env = e.env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	var out gemkittest.Output
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	stop := make(chan struct{})
	e.t.Cleanup(func() {
		close(stop)
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	// The person at the terminal accepts every proposed change but the
	// test diffs of `gemkit ide check`, which the terminal says the check
	// closes by itself (accepted first, a loaded machine's check found
	// its diff gone: "closeDiff says no diff was open").
	go func() {
		answered := 0
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			prompts := strings.Split(out.String(), "Accept [a]")
			for ; answered < len(prompts)-1; answered++ {
				if !strings.Contains(prompts[answered], "a test diff from `gemkit ide check`") {
					io.WriteString(stdin, "a\n")
				}
			}
		}
	}()
	text := out.WaitFor(e.t, "the export lines", func(s string) bool { return strings.Contains(s, "export "+"GEMINI_CLI_IDE_AUTH_TOKEN") })
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "export "); ok {
			k, v, _ := strings.Cut(rest, "=")
			e.env = append(e.env, k+"="+strings.Trim(v, "'"))
		}
	}
}

var exportNameRe = regexp.MustCompile(`(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=`)

// export runs an `export K=V …` line in a shell with the block's
// environment and keeps what the shell made of each variable.
func (e *docEnv) export(dir, line string) {
	e.t.Helper()
	var names []string
	for _, m := range exportNameRe.FindAllStringSubmatch(strings.TrimPrefix(line, "export"), -1) {
		names = append(names, m[1])
	}
	script := line + "\nprintf '%s\\0'"
	for _, n := range names {
		script += ` "$` + n + `"`
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir, cmd.Env = dir, e.env
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("`%s`: %v", line, err)
	}
	values := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i, n := range names {
		e.env = append(e.env, n+"="+values[i])
	}
}

// dropFromPath takes dir out of the block's PATH.
func (e *docEnv) dropFromPath(dir string) {
	for i, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			var keep []string
			for _, p := range filepath.SplitList(v) {
				if p != dir {
					keep = append(keep, p)
				}
			}
			e.env[i] = "PATH=" + strings.Join(keep, string(os.PathListSeparator))
		}
	}
}

// inRepo reports whether a README command runs in the repository: `go …`
// or `./…`, after any K=V assignments.
func inRepo(c string) bool {
	f := strings.Fields(c)
	for len(f) > 0 && strings.Contains(f[0], "=") && !strings.HasPrefix(f[0], "=") {
		f = f[1:]
	}
	return len(f) > 0 && (f[0] == "go" || strings.HasPrefix(f[0], "./"))
}

// startModel answers the Gemini API with words.
func (e *docEnv) startModel() {
	replies := make([]fakemodel.Reply, 8)
	for i := range replies {
		replies[i] = fakemodel.Text("main.go declares package main.")
	}
	srv, err := fakemodel.Start(replies...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { srv.Close() })
	e.env = append(e.env, "GOOGLE_GEMINI_BASE_URL="+srv.URL)
}

// walkthroughs are the Markdown files whose ```sh blocks TestREADMECommands
// runs, by the README's rules, with the least number of blocks each must
// have (a file that lost its blocks fails).
var walkthroughs = []struct {
	file      string
	minBlocks int
}{
	{"README.md", 5},
	{"docs/first-ten-minutes.md", 5},
	{"docs/extensions-write.md", 1}, // Publish your extension
}

func TestREADMECommands(t *testing.T) {
	t.Parallel()
	gemkittest.Tool(t, "python3", "python3")
	root := gemkittest.RepoRoot(t)
	for _, w := range walkthroughs {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(w.file)))
		if err != nil {
			t.Fatal(err)
		}
		blocks := parseBlocks(string(text))
		if len(blocks) < w.minBlocks {
			t.Fatalf("only %d ```sh blocks found in %s", len(blocks), w.file)
		}
		runDocBlocks(t, root, w.file, blocks)
	}
}

// runDocBlocks runs the blocks of one Markdown file, each in its own
// private world.
func runDocBlocks(t *testing.T, root, file string, blocks []docBlock) {
	for _, b := range blocks {
		if b.skipBlock {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(file), ".md") + "_line" + strconv.Itoa(b.line)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runDocBlock(t, root, file, b, "")
		})
		if b.alsoAfter != "" {
			t.Run(name+"_after", func(t *testing.T) {
				t.Parallel()
				runDocBlock(t, root, file, b, b.alsoAfter)
			})
		}
	}
}

// runDocBlock runs one block in its own private world, after the command
// before when that is not "".
func runDocBlock(t *testing.T, root, file string, b docBlock, before string) {
	e := newDocEnv(t)
	for _, f := range b.files {
		if err := os.WriteFile(filepath.Join(e.ws, f), []byte("package main // "+f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b.gemini {
		_, interop := gemkittest.Interop(t, "@google/gemini-cli")
		for i, kv := range e.env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				e.env[i] = "PATH=" + filepath.Join(interop, "node_modules", ".bin") + string(os.PathListSeparator) + v
			}
		}
	}
	if b.fresh {
		e.dropFromPath(filepath.Dir(e.bin))
	}
	if b.model {
		e.startModel()
	}
	if b.companion {
		e.startCompanion()
	}
	if before != "" {
		if why := e.run(e.ws, before, false); why != "" {
			t.Fatalf("%s, block at line %d, before it: `%s` %s", file, b.line, before, why)
		}
	}
	dir := e.ws
	for _, c := range b.commands {
		if hasPrefix(c, b.skip) {
			continue
		}
		if rest, ok := strings.CutPrefix(c, "cd "); ok {
			rest = strings.TrimSpace(rest)
			if home, ok := strings.CutPrefix(rest, "~"); ok {
				rest = filepath.Join(e.home, home)
			} else if !filepath.IsAbs(rest) {
				rest = filepath.Join(dir, rest)
			}
			if err := os.MkdirAll(rest, 0o755); err != nil {
				t.Fatal(err)
			}
			dir = rest
			continue
		}
		if strings.HasPrefix(c, "export ") {
			e.export(dir, c)
			continue
		}
		where := dir
		if inRepo(c) {
			where = root
		}
		if why := e.run(where, c, hasPrefix(c, b.servers)); why != "" {
			t.Errorf("%s, block at line %d: `%s` %s", file, b.line, c, why)
		}
	}
	checkGeminiTrust(t, e, file, b)
}

// TestHelpExamples runs the `gemkit` lines of every command's Example.
func TestHelpExamples(t *testing.T) {
	t.Parallel()
	var examples []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example != "" {
			examples = append(examples, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRoot(Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}))
	ran := 0
	for _, c := range examples {
		var lines []string
		for _, l := range strings.Split(c.Example, "\n") {
			if l = stripComment(l); strings.HasPrefix(l, "gemkit ") {
				lines = append(lines, l)
			}
		}
		ran += len(lines)
		t.Run(strings.ReplaceAll(c.CommandPath(), " ", "_"), func(t *testing.T) {
			t.Parallel()
			e := newDocEnv(t)
			for _, l := range lines {
				// Examples of servers serve; the others must exit 0.
				server := strings.HasPrefix(l, "gemkit ide serve") || strings.HasPrefix(l, "gemkit mcp") || strings.HasPrefix(l, "gemkit chat") || strings.HasPrefix(l, "gemkit acp")
				if why := e.run(e.ws, strings.ReplaceAll(l, "~/src/project", e.ws), server); why != "" {
					t.Errorf("%s example: `%s` %s", c.CommandPath(), l, why)
				}
			}
		})
	}
	if ran == 0 {
		t.Fatal("no help example found")
	}
}
