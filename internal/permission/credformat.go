package permission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The formats a handed kind's files must have: what its client
// libraries read, so that a file gemkit hands is what the kind keeps
// there and not another file put in its place (a private key, a token
// of another program's), which the person would never agree to hand.

// adcTypes are the "type"s of application default credentials that
// google-auth-library 10.9's GoogleAuth.fromJSON (googleauth.js) takes:
// authorized_user, impersonated_service_account, external_account,
// external_account_authorized_user and gdch_service_account by name,
// and anything else as a service account's key (its JWT branch, whose
// files say service_account).
var adcTypes = []string{"authorized_user", "service_account", "impersonated_service_account", "external_account", "external_account_authorized_user", "gdch_service_account"}

// checkADC says what keeps data from being application default
// credentials as the library reads them: JSON.parse of the file (the
// last of duplicate keys wins, keys in their exact case, as decoding
// into a map keeps them), an object whose "type" is one of adcTypes.
func checkADC(data []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return errors.New("is not a JSON object, as application default credentials are")
	}
	var typ string
	if json.Unmarshal(obj["type"], &typ) != nil || !slices.Contains(adcTypes, typ) {
		return fmt.Errorf("has no \"type\" Google's auth libraries take (%s), as application default credentials have", strings.Join(adcTypes, ", "))
	}
	return nil
}

// checkAWS says what keeps data from being an AWS shared credentials or
// config file, an INI file as the AWS SDKs read it: [sections] holding
// key = value lines, a line indented under a key continuing its value
// (nested settings), # and ; beginning comments; no key before the
// first section, at least one section.
func checkAWS(data []byte) error {
	sections := 0
	key := false
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || trimmed[0] == '#' || trimmed[0] == ';':
		case strings.HasPrefix(trimmed, "[") && strings.HasSuffix(trimmed, "]") && strings.TrimSpace(trimmed[1:len(trimmed)-1]) != "":
			sections++
			key = false
		case line[0] == ' ' || line[0] == '\t':
			if !key {
				return fmt.Errorf("is not an AWS credentials or config file: line %d is indented under no key", i+1)
			}
		case sections > 0 && strings.Contains(trimmed, "=") && strings.TrimSpace(trimmed[:strings.Index(trimmed, "=")]) != "":
			key = true
		default:
			return fmt.Errorf("is not an AWS credentials or config file (an INI file of [profile] sections of key = value lines): line %d is neither", i+1)
		}
	}
	if sections == 0 {
		return errors.New("is not an AWS credentials or config file: it holds no [profile] section")
	}
	return nil
}

// checkKubeconfig says what keeps data from being a kubeconfig: a YAML
// (or JSON) mapping of kind Config, or with clusters, contexts or users
// lists, as Kubernetes' clients read it.
func checkKubeconfig(data []byte) error {
	var doc map[string]any
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil || doc == nil {
		return errors.New("is not a kubeconfig: not a YAML mapping")
	}
	if doc["kind"] == "Config" {
		return nil
	}
	for _, k := range []string{"clusters", "contexts", "users"} {
		if _, ok := doc[k].([]any); ok {
			return nil
		}
	}
	return errors.New("is not a kubeconfig: neither kind Config nor clusters, contexts or users")
}
