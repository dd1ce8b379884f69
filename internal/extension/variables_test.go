package extension

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	v := Variables{ExtensionPath: "/ext", WorkspacePath: "/ws"}
	sep := string(os.PathSeparator)
	for in, want := range map[string]string{
		"${extensionPath}${/}run.js":       "/ext" + sep + "run.js",
		"${workspacePath}":                 "/ws",
		"a${pathSeparator}b":               "a" + sep + "b",
		"${unknown} stays":                 "${unknown} stays",
		"$HOME and ${HOME} stay":           "$HOME and ${HOME} stay",
		"unclosed ${extensionPath":         "unclosed ${extensionPath",
		"${extensionPath}${extensionPath}": "/ext/ext",
		"plain":                            "plain",
	} {
		if got := v.Expand(in); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (Variables{}).Expand("${extensionPath}"); got != "${extensionPath}" {
		t.Errorf("a variable without value must stay; got %q", got)
	}
}

func TestExpandJSONValuesOnly(t *testing.T) {
	v := Variables{ExtensionPath: "/ext", WorkspacePath: "/ws"}
	in := `{"${extensionPath}":"${extensionPath}","n":60000,"f":2.50,"l":["${workspacePath}",1,true,null],"o":{"k":"${/}"}}`
	out, err := v.ExpandJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got["${extensionPath}"] != "/ext" {
		t.Errorf("keys must not be substituted, values must: %s", out)
	}
	if l := got["l"].([]any); l[0] != "/ws" {
		t.Errorf("list value not substituted: %s", out)
	}
	if o := got["o"].(map[string]any); o["k"] != string(os.PathSeparator) {
		t.Errorf("nested value not substituted: %s", out)
	}
	if want := `"f":2.50`; !strings.Contains(string(out), want) {
		t.Errorf("number formatting changed: %s", out)
	}
}
