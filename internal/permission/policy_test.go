package permission

import (
	"strings"
	"testing"
)

func TestPolicyCheck(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{}, ""},
		{Policy{Read: AccessHome, Write: AccessWorkspace, AllowedHosts: []string{"localhost", "https://api.example.com"}}, ""},
		{Policy{Read: AccessWorkspace, Write: AccessHome}, "wider than"},
		{Policy{Read: "everything"}, "unknown filesystem scope"},
		{Policy{AllowedHosts: []string{"a b"}}, "allowedHosts entry"},
	} {
		err := c.p.Check()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}
