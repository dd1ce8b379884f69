package permission

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// A HandedFile is one of the person's credential files that gemkit hands
// an extension's MCP server on purpose (gemkit extensions sandbox NAME
// --allow-credentials KIND): the file Source, outside the sandbox,
// shown read-only at Target, a path relative to the server's HOME where
// the libraries of that kind look for it. Nothing else of the folder it
// lies in is shown: the rest of the person's credentials stay closed.
//
// It is found once, when the person agrees (HandCredentials), at the
// kind's own place under their home and never where a variable points,
// and recorded with its Identity in the consent; each start hands it
// only while it is still that file (CheckHanded).
type HandedFile struct {
	Kind string `json:"kind"`
	// Source is the file's real path (no link on the way to it).
	Source string `json:"source"`
	Target string `json:"target"`
	// Identity is the file as the person agreed to hand it.
	Identity FileIdentity `json:"identity"`
}

// FileIdentity is what tells one file, as it was, from any other: its
// device and inode, size, modification time and the digest of its bytes.
type FileIdentity struct {
	Device  uint64 `json:"device"`
	Inode   uint64 `json:"inode"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtimeNs"`
	Digest  string `json:"digest"`
}

// maxCredentialBytes bounds a handed file: credentials files are a few
// kilobytes, a kubeconfig of many clusters some hundreds.
const maxCredentialBytes = 4 << 20

// A CredentialsError says why a file of a kind is not handed (Why, of
// the file at Path) and what the person does about it (Fix).
type CredentialsError struct {
	Kind, Path, Why, Fix string
}

func (e *CredentialsError) Error() string {
	return fmt.Sprintf("your %s credentials are not handed: %s %s; %s", e.Kind, e.Path, e.Why, e.Fix)
}

// A NoCredentialsError says that the kind's own place holds none of
// its files: nothing to hand, which is no refusal.
type NoCredentialsError struct {
	Kind   string
	Looked []string
}

func (e *NoCredentialsError) Error() string {
	return fmt.Sprintf("no %s credentials at %s (%s)", e.Kind, strings.Join(e.Looked, " or "), CredentialLogin(e.Kind))
}

// A VariableError says that the variable Var, set to Value, makes the
// kind's programs read another file (Named) than the one at the kind's
// own place (Own), which is all gemkit hands.
type VariableError struct {
	Kind, Var, Value, Named, Own string
}

func (e *VariableError) Error() string {
	named := ""
	if e.Named != e.Value {
		named = " (" + e.Named + ")"
	}
	return fmt.Sprintf("your %s credentials are not handed: $%s is set to %q%s, which is not %s, the file gemkit hands; gemkit hands a kind's credentials only from its own place, never from where a variable points. Unset %s where gemkit and the agent run (your shell, Gemini CLI's environment, and a workspace's .env, which Gemini CLI loads in a trusted folder), or move your credentials to %s",
		e.Kind, e.Var, e.Value, named, e.Own, e.Var, e.Own)
}

// HandCredentials finds the files of kind to hand a server, for the
// person to agree to: at the kind's own place under home (its Folder:
// links on the way to the folder are the person's layout and followed),
// each a regular file the person owns, reached without a link out of
// the folder, in the kind's format, with its identity. A variable of
// getenv's that names another file is refused (VariableError); a bad
// file is refused (CredentialsError); none at all is a
// NoCredentialsError.
func HandCredentials(kind, home string, getenv func(string) string) ([]HandedFile, error) {
	sk := serverKind(kind)
	if sk == nil {
		return nil, fmt.Errorf("credentials %q %v", kind, CheckServerCredential(kind))
	}
	if !filepath.IsAbs(home) {
		return nil, fmt.Errorf("your %s credentials are not handed: gemkit finds them in your home folder, and $HOME is %q, not an absolute path", kind, home)
	}
	files, err := kindFiles(kind, sk, home)
	if err != nil {
		return nil, err
	}
	if err := CheckCredentialVariables(kind, home, files, getenv); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, &NoCredentialsError{Kind: kind, Looked: CredentialPlaces(kind, home)}
	}
	return files, nil
}

// kindFiles are the files of sk at its place under home, those absent
// left out.
func kindFiles(kind string, sk *ServerKind, home string) ([]HandedFile, error) {
	place := filepath.Join(home, sk.Folder)
	dir, err := filepath.EvalSymlinks(place)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &CredentialsError{kind, place, "cannot be read (" + err.Error() + ")", "fix the folder, or take the credentials away (--default-profile)"}
	}
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return nil, &CredentialsError{kind, place, "is not a folder gemkit can read (" + err.Error() + ")", "make it the folder " + kind + " keeps its files in"}
	}
	defer root.Close()
	var out []HandedFile
	for _, kf := range sk.Files {
		f, err := readKindFile(root, kind, sk, kf, place)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// readKindFile reads the file kf of the kind's folder (root, named place
// in words) as HandCredentials takes it.
func readKindFile(root *fsutil.Root, kind string, sk *ServerKind, kf KindFile, place string) (HandedFile, error) {
	shown := filepath.Join(place, kf.Name)
	fix := "put the file " + kind + " keeps there in its place (" + sk.Login + ")"
	refuse := func(why string) (HandedFile, error) {
		return HandedFile{}, &CredentialsError{kind, shown, why, fix}
	}
	name, err := root.Resolve(kf.Name)
	if errors.Is(err, fsutil.ErrOutside) {
		return refuse("is a link out of " + place + " (" + linkWords(err) + "): gemkit hands only the file " + kind + " keeps there")
	}
	if err != nil {
		return refuse("cannot be read (" + err.Error() + ")")
	}
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return HandedFile{}, err
	}
	if err != nil {
		return refuse("cannot be read (" + err.Error() + ")")
	}
	if why := notOwnRegular(fi); why != "" {
		return refuse(why)
	}
	data, id, err := readIdentity(root, name, fi)
	if err != nil {
		return refuse(err.Error())
	}
	if err := kf.format(data); err != nil {
		return refuse(err.Error())
	}
	return HandedFile{Kind: kind, Source: root.Path(name), Target: filepath.Join(sk.Folder, kf.Name), Identity: id}, nil
}

// linkWords say where the link that err refused leads.
func linkWords(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return strings.TrimPrefix(pe.Err.Error(), "is ")
	}
	return err.Error()
}

// notOwnRegular says why fi is not a file to hand: not a regular file,
// or not the person's; "" when it is.
func notOwnRegular(fi fs.FileInfo) string {
	if !fi.Mode().IsRegular() {
		return fmt.Sprintf("is not a regular file (%s)", fileKind(fi.Mode()))
	}
	if !ownedByMe(fi) {
		_, _, uid := fileID(fi)
		return fmt.Sprintf("belongs to uid %d, not to you (uid %d): gemkit hands only your own files", uid, os.Getuid())
	}
	return ""
}

// fileKind names what a file that is not regular is.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a plain file"
}

// readIdentity reads the regular file name of root, which Lstat found
// as fi, and says what it is: the file opened must be the one looked
// at, and its bytes within maxCredentialBytes.
func readIdentity(root *fsutil.Root, name string, fi fs.FileInfo) ([]byte, FileIdentity, error) {
	f, ofi, err := root.OpenStat(name)
	if err != nil {
		return nil, FileIdentity{}, fmt.Errorf("cannot be read (%v)", err)
	}
	defer f.Close()
	if !os.SameFile(fi, ofi) {
		return nil, FileIdentity{}, errors.New("was replaced while gemkit read it")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCredentialBytes+1))
	if err != nil {
		return nil, FileIdentity{}, fmt.Errorf("cannot be read (%v)", err)
	}
	if len(data) > maxCredentialBytes {
		return nil, FileIdentity{}, fmt.Errorf("is larger than %d MiB, which no credentials file is", maxCredentialBytes>>20)
	}
	dev, ino, _ := fileID(ofi)
	sum := sha256.Sum256(data)
	return data, FileIdentity{Device: dev, Inode: ino, Size: ofi.Size(), ModTime: ofi.ModTime().UnixNano(), Digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// CheckHanded says why f, found and agreed to by HandCredentials, is no
// longer the file agreed to: gone, no longer a regular file of the
// person's, reached through a link, or another file or other bytes
// (its identity); nil when it is, and is handed. Its Fix is the
// person's; the caller adds the command that agrees to it again.
func CheckHanded(f HandedFile) error {
	sk := serverKind(f.Kind)
	if sk == nil {
		return fmt.Errorf("credentials %q %v", f.Kind, CheckServerCredential(f.Kind))
	}
	changed := func(why string) error {
		return &CredentialsError{f.Kind, f.Source, why, "if you changed it yourself (" + sk.Login + "), agree to hand it as it is now"}
	}
	dir := filepath.Dir(f.Source)
	if !filepath.IsAbs(f.Source) {
		return changed("is not an absolute path, as gemkit records one")
	}
	if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
		return changed("is no longer reached without a link (a folder on the way was moved or replaced)")
	}
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return changed("cannot be read (" + err.Error() + ")")
	}
	defer root.Close()
	name := filepath.Base(f.Source)
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return changed("is gone since you agreed to hand it")
	}
	if err != nil {
		return changed("cannot be read (" + err.Error() + ")")
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(f.Source)
		return changed(fmt.Sprintf("was replaced by a symbolic link (to %q) since you agreed to hand it", target))
	}
	if why := notOwnRegular(fi); why != "" {
		return changed(why)
	}
	_, id, err := readIdentity(root, name, fi)
	if err != nil {
		return changed(err.Error())
	}
	if id != f.Identity {
		return changed("changed since you agreed to hand it (" + identityChange(f.Identity, id) + ")")
	}
	return nil
}

// identityChange says how now differs from was.
func identityChange(was, now FileIdentity) string {
	switch {
	case was.Device != now.Device || was.Inode != now.Inode:
		return "another file is there now"
	case was.Digest != now.Digest:
		return "its bytes changed"
	}
	return "it was written since"
}

// CheckCredentialVariables says which variable of getenv makes kind's
// programs read another file than its own place's: the recorded file
// of handed with that place, else the place under home. A variable
// naming a relative path is one (each program takes it from the folder
// it starts in); one naming the same file, through links or not, is
// not.
func CheckCredentialVariables(kind, home string, handed []HandedFile, getenv func(string) string) error {
	sk := serverKind(kind)
	if sk == nil || getenv == nil {
		return nil
	}
	own := func(file string) string {
		for _, f := range handed {
			if f.Kind == kind && filepath.Base(f.Target) == file {
				return f.Source
			}
		}
		return filepath.Join(home, sk.Folder, file)
	}
	for _, v := range sk.Vars {
		val := getenv(v.Name)
		if val == "" {
			continue
		}
		names := []string{val}
		if v.List {
			names = filepath.SplitList(val)
		}
		for _, n := range names {
			if n == "" {
				continue
			}
			named := n
			if v.Folder {
				named = filepath.Join(n, v.File)
			}
			if filepath.IsAbs(n) && sameFile(named, own(v.File)) {
				continue
			}
			return &VariableError{Kind: kind, Var: v.Name, Value: val, Named: named, Own: own(v.File)}
		}
	}
	return nil
}

// sameFile reports whether a and b name one file: the same path, or the
// same file through links.
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// CredentialPlaces are the files of kind at its own place under home,
// for words.
func CredentialPlaces(kind, home string) []string {
	sk := serverKind(kind)
	if sk == nil {
		return nil
	}
	var out []string
	for _, f := range sk.Files {
		out = append(out, filepath.Join(home, sk.Folder, f.Name))
	}
	return out
}

// NotHanded says why a server handed kind by the widening gets no file
// of it, none being agreed to, and how the person hands one (fix);
// agree is the command that finds the file and asks them to agree to
// it.
func NotHanded(kind, home, agree string) (why, fix string) {
	places := CredentialPlaces(kind, home)
	for _, p := range places {
		if _, err := os.Lstat(p); err == nil {
			return "you have not agreed to hand them the file at " + p + " (none was there when you switched the extension, or gemkit did not yet record the files agreed to)",
				"`" + agree + "` shows the file and asks you to agree to hand it"
		}
	}
	return "there is none at " + strings.Join(places, " or "), CredentialLogin(kind) + "; then `" + agree + "` hands it"
}

// CredentialVariables are the variables that move the files of the
// kinds a server can be handed, which the switch and a server's start
// look at.
func CredentialVariables() []string {
	var out []string
	for _, c := range Credentials {
		if c.Server != nil {
			for _, v := range c.Server.Vars {
				out = append(out, v.Name)
			}
		}
	}
	return out
}

// CredentialPlacesLines say, for every kind a server can be handed, its
// files under home and the variables that would move them, a line each
// begun with indent.
func CredentialPlacesLines(indent, home string) []string {
	var out []string
	for _, c := range Credentials {
		if c.Server == nil {
			continue
		}
		var vars []string
		for _, v := range c.Server.Vars {
			vars = append(vars, v.Name)
		}
		out = append(out, indent+c.Kind+": "+strings.Join(CredentialPlaces(c.Kind, home), ", ")+" (refused: "+strings.Join(vars, ", ")+" naming another)")
	}
	return out
}

// ServerCredentialKinds names the kinds a server can be handed, for
// messages.
func ServerCredentialKinds() []string {
	var out []string
	for _, c := range Credentials {
		if c.Server != nil {
			out = append(out, c.Kind)
		}
	}
	return out
}

// CheckServerCredential says what is wrong with a kind of credentials
// asked for an extension's MCP servers.
func CheckServerCredential(kind string) error {
	if serverKind(kind) != nil {
		return nil
	}
	if CheckCredential(kind) == nil {
		return fmt.Errorf("%s's credentials are not handed to an MCP server: the servers of the extensions gemkit knows read none of them from a file (the kinds a server can be given: %s; a token a server takes from a variable is passed with --allow-env)", kind, strings.Join(ServerCredentialKinds(), ", "))
	}
	return fmt.Errorf("is not a kind of credentials gemkit hands to an MCP server (the kinds: %s)", strings.Join(ServerCredentialKinds(), ", "))
}

// ServerCredentialWords say what handing kind gives a server.
func ServerCredentialWords(kind string) string {
	if sk := serverKind(kind); sk != nil {
		return sk.Words
	}
	return kind
}

// CredentialCloud says whose credentials kind's are, in a refusal's
// words.
func CredentialCloud(kind string) string {
	if sk := serverKind(kind); sk != nil {
		return sk.Cloud
	}
	return kind
}

// CredentialLogin says how the person makes the files of kind.
func CredentialLogin(kind string) string {
	if sk := serverKind(kind); sk != nil {
		return sk.Login
	}
	return ""
}

// MetadataHost reports whether host (a name or an address, with or
// without a port or brackets) is a cloud metadata service, and the kinds
// of credentials that would answer what it is asked for (none: a cloud
// whose credentials gemkit does not hand), in the table's order. On a
// cloud machine each hands out the machine's own credentials (its
// service account's token, its instance role's keys) to whatever asks,
// so no host of these is ever allowed to a server: the person hands it
// their own credentials by kind instead.
//
// Sources: Google Cloud, "About VM metadata" (169.254.169.254,
// metadata.google.internal, and the bare name metadata; gcp-metadata
// 8.1's HOST_ADDRESS and SECONDARY_HOST_ADDRESS, under interop's
// node_modules); AWS EC2 User Guide, "Instance metadata service"
// (169.254.169.254, fd00:ec2::254), Amazon ECS Developer Guide, "Task
// IAM role" (169.254.170.2) and Amazon EKS User Guide, "Pod Identity"
// (169.254.170.23, fd00:ec2::23); Azure, "Instance Metadata Service"
// (169.254.169.254); otherMetadataHosts.
func MetadataHost(host string) (kinds []string, ok bool) {
	h := strings.ToLower(strings.TrimSpace(host))
	if hp, _, err := net.SplitHostPort(h); err == nil {
		h = hp
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	if ip := net.ParseIP(h); ip != nil {
		h = ip.String()
	}
	for _, c := range Credentials {
		if c.Server != nil && slices.Contains(c.Server.Metadata, h) {
			kinds = append(kinds, c.Kind)
		}
	}
	return kinds, len(kinds) > 0 || slices.Contains(otherMetadataHosts, h)
}
