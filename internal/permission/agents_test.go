package permission

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gemkit/gemkit/ide"
)

// TestAgentHomesClosed: with each agent's home moved by its variable,
// absolute, relative (from the working folder of the process whose
// environment it is, as the agent takes it) or under ~ where the agent
// expands it, the files that hold its tokens are closed: its lock folder,
// its login, Gemini CLI's whole folder. This holds for gemkit's own
// environment, read through Homes or through Getenv as toolrun passes
// it, and for a running server's (Writers). Before, a relative QWEN_HOME
// was dropped here while ide/discovery made it absolute, so the Qwen
// Code lock file, which holds a token, stayed open.
func TestAgentHomesClosed(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	type form struct {
		name, value, dir, folder string
	}
	for _, a := range ide.Agents {
		if a.HomeEnv == "" {
			continue
		}
		forms := []form{
			{"absolute", filepath.Join(root, "moved"), "", filepath.Join(root, "moved")},
			{"relative", "rel/" + a.ID, filepath.Join(root, "cwd"), filepath.Join(root, "cwd", "rel", a.ID)},
			{"relative to this process", "rel/" + a.ID, "", filepath.Join(wd, "rel", a.ID)},
		}
		if a.ExpandsTilde {
			forms = append(forms, form{"under ~", "~/t", "", filepath.Join(home, "t")})
		}
		for _, f := range forms {
			folder := f.folder
			if a.HomeEnvIsParent {
				folder = filepath.Join(folder, a.HomeDir)
			}
			var secrets []string
			if a.ClosedWhole {
				secrets = append(secrets, folder)
			}
			if a.LockDir != "" {
				secrets = append(secrets, filepath.Join(folder, a.LockDir))
			}
			if a.Credential != "" {
				secrets = append(secrets, filepath.Join(folder, a.Credential))
			}
			vars := map[string]string{a.HomeEnv: f.value}
			for _, in := range []struct {
				name string
				in   ClosedInputs
			}{
				{"Homes", ClosedInputs{Home: home, Dir: f.dir, Homes: vars, RecordDirs: []string{}}},
				{"Getenv", ClosedInputs{Home: home, Dir: f.dir, Getenv: func(k string) string { return vars[k] }, RecordDirs: []string{}}},
				{"Writers", ClosedInputs{Home: home, RecordDirs: []string{}, Writers: []Env{{Home: home, Dir: f.dir, Homes: vars}}}},
			} {
				if in.name == "Writers" && f.dir == "" {
					continue
				}
				t.Run(a.ID+"/"+f.name+"/"+in.name, func(t *testing.T) {
					closed := ClosedPaths(in.in)
					for _, s := range secrets {
						if !slices.Contains(closed, s) {
							t.Errorf("%s=%q: %s is not closed: %v", a.HomeEnv, f.value, s, closed)
						}
					}
				})
			}
		}
	}
}

// TestAgentFoldersProtected: every agent folder of ide.Agents is a
// protected name (KindAgent) in the workspace and the home folder, so a
// tool cannot rewrite an agent's settings there: the table and the
// protections cannot drift apart.
func TestAgentFoldersProtected(t *testing.T) {
	for _, a := range ide.Agents {
		if a.HomeDir == "" {
			continue
		}
		i := slices.IndexFunc(Protections, func(p Protection) bool { return p.Name == a.HomeDir })
		if i < 0 {
			t.Errorf("%s's folder %s is not among Protections", a.Name, a.HomeDir)
			continue
		}
		if p := Protections[i]; !p.Dir || p.Kind != KindAgent || !p.InWorkspace || !p.InHome {
			t.Errorf("%s's folder is protected as %+v", a.Name, p)
		}
	}
}
