package permission

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitConfigLikeGit reads configuration files as the real git does:
// `git config --file F --list` and parseGitConfig agree on every file
// (the older "[name.sub]" form, quotes, escapes, continued lines,
// comments, a variable without a value, a variable on the header's line,
// CRLF line ends), and where git refuses a file the variables before the
// bad line are what parseGitConfig returns.
func TestGitConfigLikeGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is not installed: run scripts/setup-and-test, or apt-get install -y git")
	}
	dir := t.TempDir()
	for i, text := range []string{
		"[core]\n\thooksPath = .husky/_\n",
		"[Core]\n\tHooksPath = \" spaced \\\"quoted\\\" \" ; comment\n\tfsmonitor = ./hooks/fsmonitor.sh # c\n",
		"[core] hooksPath = on-the-header-line\n[alias]\n\tx = !sh -c \\\"echo hi\\\"\n",
		"[section.Sub]\n\tkey\n\tother = a\\\n  b\n",
		"[includeIf \"gitdir:~/work/\"]\n\tpath = ../shared.gitconfig\n[include]\n\tpath = ~/x.gitconfig\n",
		"[filter \"Lfs\"]\n\tsmudge = ./bin/smudge %f\n\tclean = \"./bin/clean\" %f\n",
		"[core]\r\n\thooksPath = crlf\r\n",
		"\ufeff[core]\n\thooksPath = after-bom\n",
		"[core]\n\thooksPath = a\tb   c  \n",
		"[core]\n\thooksPath = good\n\tbad line here\n\tfsmonitor = never\n",
		"[remote.x \"y\"]\n\tk = v\n",
	} {
		f := filepath.Join(dir, "config"+string(rune('a'+i)))
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(git, "config", "--file", f, "--list")
		cmd.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		out, gitErr := cmd.Output()
		var got []string
		for _, v := range parseGitConfig(text) {
			if v.value == "" && !strings.Contains(text, v.key+" =") && !strings.Contains(text, v.key+"=") {
				got = append(got, v.name())
			} else {
				got = append(got, v.name()+"="+v.value)
			}
		}
		if gitErr != nil {
			// git refuses the whole file; parseGitConfig keeps what
			// came before the bad line, which takes no effect either.
			if !strings.Contains(text, "bad line") {
				t.Errorf("%q: git refused it (%v) and parseGitConfig gave %q", text, gitErr, got)
			}
			if strings.Join(got, "\n") != "core.hookspath=good" {
				t.Errorf("%q: parseGitConfig gave %q", text, got)
			}
			continue
		}
		want := strings.TrimSuffix(string(out), "\n")
		if strings.Join(got, "\n") != want {
			t.Errorf("%q:\n git:  %q\n ours: %q", text, want, strings.Join(got, "\n"))
		}
	}
}
