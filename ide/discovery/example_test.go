package discovery_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

// A companion announces itself with Write; a CLI started in the workspace
// finds the file with Choose, as Gemini CLI chooses among the files of
// the discovery folder.
func ExampleChoose() {
	dir, _ := os.MkdirTemp("", "discovery")
	defer os.RemoveAll(dir)
	ws, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(ws)

	const editorPID, port = 4242, 40117
	if _, err := discovery.Write(dir, editorPID, port, ide.DiscoveryFile{
		Port:          port,
		WorkspacePath: ws,
		AuthToken:     "secret",
		IDEInfo:       &ide.IDEInfo{Name: "myeditor", DisplayName: "My Editor"},
	}); err != nil {
		log.Fatal(err)
	}

	ch, err := discovery.Choose(discovery.ChooseOptions{
		Dir:    dir,
		IDEPID: editorPID,
		Cwd:    ws,
		Getenv: func(string) string { return "" },
		Alive:  func(pid int) bool { return pid == editorPID },
	})
	if err != nil {
		log.Fatal(err)
	}
	c := ch.Chosen
	fmt.Println(c.Name, c.Contents.Port, c.Contents.IDEInfo.DisplayName, c.Mode)
	// Output:
	// gemini-ide-server-4242-40117.json 40117 My Editor -rw-------
}

// ParseContents reads a discovery file as the real client does:
// leniently, each field taken only when its type is usable, so that the
// environment's fallbacks apply where the real client applies them.
func ExampleParseContents() {
	c, err := discovery.ParseContents([]byte(`{"port":"40117","workspacePath":null,"authToken":7}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("port:", c.Port, "workspace known:", c.WorkspacePath != nil, "token known:", c.AuthToken != nil)
	// Output:
	// port: 40117 workspace known: false token known: false
}

// ValidateWorkspace is the check that makes a CLI refuse a companion
// whose workspace does not hold its directory.
func ExampleValidateWorkspace() {
	ws, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(ws)
	sub := filepath.Join(ws, "cmd")
	if err := os.Mkdir(sub, 0o700); err != nil {
		log.Fatal(err)
	}
	fmt.Println(discovery.ValidateWorkspace(&ws, sub))
	fmt.Println(discovery.ValidateWorkspace(nil, sub) == discovery.ErrNoWorkspace)
	// Output:
	// <nil>
	// true
}

// Env is what a companion puts in the environment of its editor's
// terminals, so that a CLI started there finds it without the file.
func ExampleEnv() {
	env := discovery.Env(ide.DiscoveryFile{Port: 40117, WorkspacePath: "/home/me/project", AuthToken: "secret"}, 4242)
	fmt.Print(discovery.ExportLines(env))
	// Output:
	// export GEMINI_CLI_IDE_AUTH_TOKEN=secret
	// export GEMINI_CLI_IDE_PID=4242
	// export GEMINI_CLI_IDE_SERVER_PORT=40117
	// export GEMINI_CLI_IDE_WORKSPACE_PATH=/home/me/project
}
