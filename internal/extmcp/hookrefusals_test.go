package extmcp

import (
	"testing"
	"time"
)

// TestKeepHookRefusalsNotExecutable is the newcomer tour's hook script
// without its execute bit: bash cannot run it, says "Permission denied"
// of it and exits 126. Nothing wrote there, so doctor must not tell of
// a refused write to the script in its extension's folder (which sends
// its author looking for a write the script never made), while a write
// the same words name in a run that did start is still kept.
func TestKeepHookRefusalsNotExecutable(t *testing.T) {
	const ws, dir = "/tmp/tour/ws", "/home/me/.gemini/extensions/hk"
	script := dir + "/hooks/noexec.sh"
	notExec := "/usr/bin/bash: line 1: " + script + ": Permission denied\n"
	for _, c := range []struct {
		name string
		run  HookRun
		want int
	}{
		{"not executable", HookRun{ExitCode: 126, Stderr: notExec}, 0},
		{"a refused write", HookRun{ExitCode: 1, Stderr: "sh: 1: cannot create " + dir + "/state: Permission denied\n"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			run := c.run
			run.Extension, run.Hook, run.Workspace, run.Dir, run.Start = "hk", "noexec", ws, dir, time.Now()
			KeepHookRefusals(run)
			path, err := RefusalsPath(map[string]string{"HOME": home})
			if err != nil {
				t.Fatal(err)
			}
			kept, _ := ReadRefusals(path)
			if len(kept) != c.want {
				t.Errorf("kept %d refusals, want %d: %+v", len(kept), c.want, kept)
			}
		})
	}
}
