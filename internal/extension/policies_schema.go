package extension

import (
	"fmt"
	"math"
	"slices"

	"github.com/gemkit/gemkit/internal/agenttoml"
)

// The schema of a policy file, as zod checks it in Gemini CLI 0.61
// (PolicyFileSchema, PolicyRuleSchema and SafetyCheckerRuleSchema in
// packages/core/src/policy/toml-loader.ts, zod 3): keys exactly as
// written there, any other key dropped; a value of the wrong type fails
// the whole file.

// tomlRule is a [[rule]] that passed the schema.
type tomlRule struct {
	tomlMatch
	decision         string
	subagent         *string
	interactive      *bool
	allowRedirection *bool
	denyMessage      *string
}

// tomlChecker is a [[safety_checker]] that passed the schema.
type tomlChecker struct {
	tomlMatch
	typ, name string
	config    *agenttoml.Table
}

// tomlMatch are the fields rules and checkers share.
type tomlMatch struct {
	toolNames                      []string
	mcpName, argsPattern, cmdRegex *string
	cmdPrefix                      []string
	hasPrefix, prefixList          bool
	priority                       float64
	modes                          []string
	annotations                    *agenttoml.Table
}

// approvalModes are ApprovalMode's values; decisions PolicyDecision's.
var (
	approvalModes = []string{"default", "autoEdit", "yolo", "plan"}
	decisions     = []string{"allow", "deny", "ask_user"}
)

// schema gathers the problems of one table, by field.
type schema struct {
	t        *agenttoml.Table
	where    string
	problems []string
}

func (s *schema) bad(field, msg string) {
	s.problems = append(s.problems, fmt.Sprintf("field %q: %s", s.where+"."+field, msg))
}

func (s *schema) str(field string) *string {
	v, ok := s.t.Get(field)
	if !ok {
		return nil
	}
	str, isStr := v.(string)
	if !isStr {
		s.bad(field, "expected a string, received "+jsType(v))
		return nil
	}
	return &str
}

func (s *schema) boolean(field string) *bool {
	v, ok := s.t.Get(field)
	if !ok {
		return nil
	}
	b, isBool := v.(bool)
	if !isBool {
		s.bad(field, "expected a boolean, received "+jsType(v))
		return nil
	}
	return &b
}

// strings reads a field of a string or a list of strings (zod's
// z.union([z.string(), z.array(z.string())])), or, when list, of a list
// only; required says it must be there.
// wasList says it was written as a list.
func (s *schema) strings(field string, required, list bool) (out []string, present, wasList bool) {
	v, ok := s.t.Get(field)
	if !ok {
		if required {
			s.bad(field, "required")
		}
		return nil, false, false
	}
	if str, isStr := v.(string); isStr && !list {
		return []string{str}, true, false
	}
	items, isList := v.([]agenttoml.Value)
	if !isList {
		s.bad(field, "expected a string or a list of strings, received "+jsType(v))
		return nil, false, false
	}
	out = []string{}
	for _, it := range items {
		str, isStr := it.(string)
		if !isStr {
			s.bad(field, "expected a list of strings, with "+jsType(it))
			return nil, false, false
		}
		out = append(out, str)
	}
	return out, true, true
}

func (s *schema) enum(field string, allowed []string, required bool) string {
	p := s.str(field)
	switch {
	case p == nil && required:
		if _, ok := s.t.Get(field); !ok {
			s.bad(field, "required")
		}
		return ""
	case p == nil:
		return ""
	case !slices.Contains(allowed, *p):
		s.bad(field, fmt.Sprintf("%q is none of %v", *p, allowed))
	}
	return *p
}

// record reads a z.record: a table, inline or not.
func (s *schema) record(field string) *agenttoml.Table {
	v, ok := s.t.Get(field)
	if !ok {
		return nil
	}
	t, isTable := v.(*agenttoml.Table)
	if !isTable {
		s.bad(field, "expected a table, received "+jsType(v))
	}
	return t
}

// number reads priority: a JavaScript number (no NaN), an integer;
// limit its range where the schema has one (rules: 0 to 999).
func (s *schema) number(field string, required, limit bool) float64 {
	v, ok := s.t.Get(field)
	if !ok {
		if required {
			s.bad(field, "priority is required")
		}
		return 0
	}
	f, isNum := v.(float64)
	switch {
	case !isNum || math.IsNaN(f):
		s.bad(field, "priority must be a number")
	case f != math.Trunc(f) || math.IsInf(f, 0):
		s.bad(field, "priority must be an integer")
	case limit && f < 0:
		s.bad(field, "priority must be >= 0")
	case limit && f > 999:
		s.bad(field, "priority must be <= 999")
	}
	return f
}

// jsType names v's type as zod says it received.
func jsType(v agenttoml.Value) string {
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if math.IsNaN(x) {
			return "nan"
		}
		return "number"
	case agenttoml.BigInt:
		return "bigint"
	case agenttoml.Datetime:
		return "date"
	case []agenttoml.Value:
		return "array"
	}
	return "object"
}

// match reads the fields rules and checkers share.
func (s *schema) match(rule bool) tomlMatch {
	var m tomlMatch
	m.toolNames, _, _ = s.strings("toolName", true, false)
	m.mcpName = s.str("mcpName")
	m.argsPattern = s.str("argsPattern")
	m.cmdPrefix, m.hasPrefix, m.prefixList = s.strings("commandPrefix", false, false)
	m.cmdRegex = s.str("commandRegex")
	m.priority = s.number("priority", rule, rule)
	if modes, ok, _ := s.strings("modes", false, true); ok {
		for _, md := range modes {
			if !slices.Contains(approvalModes, md) {
				s.bad("modes", fmt.Sprintf("%q is none of %v", md, approvalModes))
			}
		}
		m.modes = modes
	}
	m.annotations = s.record("toolAnnotations")
	return m
}

// decodePolicyFile checks doc against the schema: the rules and
// checkers it holds, or the problems that make Gemini CLI skip it.
func decodePolicyFile(doc *agenttoml.Table) ([]tomlRule, []tomlChecker, []string) {
	var rules []tomlRule
	var checkers []tomlChecker
	var problems []string
	tables := func(field string) []*agenttoml.Table {
		v, ok := doc.Get(field)
		if !ok {
			return nil
		}
		items, isList := v.([]agenttoml.Value)
		if !isList {
			problems = append(problems, fmt.Sprintf("field %q: expected a list of tables, received %s", field, jsType(v)))
			return nil
		}
		var out []*agenttoml.Table
		for i, it := range items {
			t, isTable := it.(*agenttoml.Table)
			if !isTable {
				problems = append(problems, fmt.Sprintf("field %q: expected a table, received %s", fmt.Sprintf("%s.%d", field, i), jsType(it)))
				continue
			}
			out = append(out, t)
		}
		return out
	}
	for i, t := range tables("rule") {
		s := &schema{t: t, where: fmt.Sprintf("rule.%d", i)}
		r := tomlRule{tomlMatch: s.match(true), decision: s.enum("decision", decisions, true),
			subagent: s.str("subagent"), interactive: s.boolean("interactive"), denyMessage: s.str("denyMessage")}
		r.allowRedirection = s.boolean("allowRedirection")
		if old := s.boolean("allow_redirection"); r.allowRedirection == nil {
			r.allowRedirection = old
		}
		if old := s.str("deny_message"); r.denyMessage == nil {
			r.denyMessage = old
		}
		problems = append(problems, s.problems...)
		rules = append(rules, r)
	}
	for i, t := range tables("safety_checker") {
		s := &schema{t: t, where: fmt.Sprintf("safety_checker.%d", i)}
		c := tomlChecker{tomlMatch: s.match(false)}
		c.typ, c.name, c.config = s.checker()
		problems = append(problems, s.problems...)
		checkers = append(checkers, c)
	}
	return rules, checkers, problems
}

// checker reads a checker's checker table: the discriminated union of
// an in-process checker (a name Gemini CLI knows) and an external one.
func (s *schema) checker() (typ, name string, config *agenttoml.Table) {
	v, ok := s.t.Get("checker")
	t, isTable := v.(*agenttoml.Table)
	if !ok || !isTable {
		s.bad("checker", "expected a table")
		return "", "", nil
	}
	sub := &schema{t: t, where: s.where + ".checker"}
	typ = sub.enum("type", []string{"in-process", "external"}, true)
	switch typ {
	case "in-process":
		name = sub.enum("name", []string{"allowed-path", "conseca"}, true)
	case "external":
		if n := sub.str("name"); n != nil {
			name = *n
		} else if _, ok := t.Get("name"); !ok {
			sub.bad("name", "required")
		}
	}
	if typ != "" {
		sub.strings("required_context", false, true)
		config = sub.record("config")
	}
	s.problems = append(s.problems, sub.problems...)
	return typ, name, config
}
