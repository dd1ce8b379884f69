// Package discovery reads and writes the discovery files through which a
// Gemini CLI finds the IDE companion of the editor it runs in:
// os.TempDir()/gemini/ide/gemini-ide-server-<pid>-<port>.json, as the
// [IDE companion spec] defines them. A companion writes one ([Write],
// [Env] for its terminals); a CLI finds the editor process it runs in
// ([FindIDEProcess]), chooses a file exactly as the real client does
// ([Choose], after [ide-connection-utils.ts]) and checks its workspace
// ([ValidateWorkspace]). Qwen Code's lock files ([WriteQwenLock],
// [ChooseQwen]) and Claude Code's ([WriteClaudeLock]) are here too.
//
// [IDE companion spec]: https://geminicli.com/docs/ide-integration/ide-companion-spec
// [ide-connection-utils.ts]: https://github.com/google-gemini/gemini-cli/tree/v0.61.0/packages/core/src/ide/ide-connection-utils.ts
package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/gemkit/gemkit/ide"
)

// Dir is the folder of the discovery files. It honours TMPDIR, as the real
// client's os.tmpdir() does.
func Dir() string {
	return filepath.Join(os.TempDir(), filepath.FromSlash(ide.DiscoveryDirName))
}

// FileName is the name of the discovery file of a companion serving the
// editor process pid on port.
func FileName(pid, port int) string {
	return fmt.Sprintf("%s%d-%d%s", ide.DiscoveryFilePrefix, pid, port, ide.DiscoveryFileSuffix)
}

// LegacyFileName is the older name, without the port, that the real client
// still tries first (getConnectionConfigFromFile in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts).
func LegacyFileName(pid int) string {
	return fmt.Sprintf("%s%d%s", ide.DiscoveryFilePrefix, pid, ide.DiscoveryFileSuffix)
}

var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^gemini-ide-server-(\d+)-(\d+)\.json$`) })

// ParseFileName returns the pid and port a discovery file's name carries, or
// ok false when name does not follow the pattern the real client reads
// (getConnectionConfigFromFile in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts).
func ParseFileName(name string) (pid, port int, ok bool) {
	m := namePattern().FindStringSubmatch(name)
	if m == nil {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(m[1])
	port, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return pid, port, true
}
