package toolrun

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// safeEnv are the variables of the user's environment a tool inherits:
// where programs are, who and where the user is, language and terminal.
// Everything else (tokens, cloud credentials, SSH agents, proxies) stays
// behind unless the extension declares it as a setting.
var safeEnv = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "LANG": true, "LANGUAGE": true,
	"TZ": true, "TERM": true, "COLORTERM": true, "NO_COLOR": true,
	// The locale categories POSIX defines, and no other LC_ name: a
	// variable such as LC_GITHUB_TOKEN (ssh forwards LC_* by default)
	// is not a locale.
	"LC_ALL": true, "LC_CTYPE": true, "LC_COLLATE": true, "LC_MESSAGES": true,
	"LC_MONETARY": true, "LC_NUMERIC": true, "LC_TIME": true,
}

// toolEnv builds the tool's whole environment: the safe variables, the
// locale, the private temp dir, and the extension's declared settings with
// their values from its settings file. Settings never come from the
// user's environment: an extension that declared a setting named
// GITHUB_TOKEN or GEMINI_API_KEY would otherwise receive the user's own
// secret without the consent prompt saying so.
func toolEnv(user map[string]string, settings []extension.Setting, stored map[string]string, home, tmp string) []string {
	out := map[string]string{}
	for k, v := range user {
		if safeEnv[k] {
			out[k] = v
		}
	}
	out["HOME"] = home
	// Relative and empty PATH entries name the tool's working directory:
	// a program the tool looks up must not be one a file in the
	// workspace can shadow.
	var path []string
	for _, dir := range filepath.SplitList(out["PATH"]) {
		if filepath.IsAbs(dir) {
			path = append(path, dir)
		}
	}
	out["PATH"] = strings.Join(path, string(filepath.ListSeparator))
	for _, k := range []string{"TMPDIR", "TMP", "TEMP"} {
		out[k] = tmp
	}
	// A tool may not write its own folder; stop Python trying to.
	out["PYTHONDONTWRITEBYTECODE"] = "1"
	for _, s := range settings {
		if s.EnvVar == "" {
			continue
		}
		if v, ok := stored[s.EnvVar]; ok {
			out[s.EnvVar] = v
		}
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, len(keys))
	for i, k := range keys {
		env[i] = k + "=" + out[k]
	}
	return env
}

// maxSettingsBytes bounds a settings file: far above any real one.
const maxSettingsBytes = 1 << 20

// ReadSettings reads the settings files (.env) of an extension found in
// dirs (its own folder, then its entry in the extensions folder: later
// ones win). A missing file is no settings. Each is read through an
// fsutil.Root of its folder: the extension ships that folder, so a .env
// that is a link out of it (../../.env, /proc/self/cwd/.env,
// /proc/self/fd/0), a FIFO or a device is refused with an error naming
// it, never read with the person's rights and handed to the tool as if
// it were the extension's setting.
func ReadSettings(dirs ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, d := range dirs {
		m, err := readDotEnv(d)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// InstalledSettings reads the settings of an installed extension where
// Gemini CLI 0.61 reads their user values: the .env of the entry named
// after the manifest in the extensions folder
// (~/.gemini/extensions/NAME/.env; getEnvFilePath and ExtensionStorage
// in @google/gemini-cli's bundle), which for a linked extension is the
// entry that records the link, never the linked folder's own .env (an
// author's, which Gemini CLI does not read either). The workspace's .env
// Gemini CLI reads in trusted folders is its own: gemkit, which knows no
// trusted folders, does not hand a workspace's values to a tool or a
// server (describe says so).
func InstalledSettings(in *extension.Installed) (map[string]string, error) {
	return ReadSettings(in.UserSettingsDir())
}

// readDotEnv reads the .env file of the folder dir (KEY=VALUE lines,
// # comments, optional quotes).
func readDotEnv(dir string) (map[string]string, error) {
	root, err := fsutil.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("settings file: %w", err)
	}
	defer root.Close()
	data, err := root.ReadFile(".env", maxSettingsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, fsutil.ErrOutside) || errors.Is(err, fsutil.ErrNotRegular) {
		return nil, fmt.Errorf("settings file: %w. An extension's settings are a file of its own folder: remove it, or replace it with such a file", err)
	}
	if err != nil {
		return nil, fmt.Errorf("settings file: %w", err)
	}
	path := root.Path(".env")
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxSettingsBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want KEY=VALUE", path, n)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	return out, sc.Err()
}
