package proxy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/internal/suggest"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/method"
)

// Taint modes: how the crafted text meets a tool's real result.
const (
	ModeAppend  = "append"  // the result, then the payload
	ModePrepend = "prepend" // the payload, then the result
	ModeReplace = "replace" // the payload instead of the result
	ModeInsert  = "insert"  // the payload on a line of its own after a marker in the result
	ModeCarrier = "carrier" // the real result is the channel's carrier
)

var modes = []string{ModeAppend, ModePrepend, ModeReplace, ModeInsert, ModeCarrier}

// Rule selects tool results to rewrite and says how.
type Rule struct {
	// Tool is a glob of tool names ("read_*"); "*" for any tool.
	Tool string
	// Args, when set, must all match the call's arguments: each a glob
	// over the argument's value as text ("*@example.com",
	// "*acme.example*", "*.eml"); * crosses '/' (see globMatch).
	Args map[string]string
	// Nth, when positive, taints only the nth call the rule matches in a
	// session (1 for the first); 0 taints every one.
	Nth int
	// Mode is one of append, prepend, replace, insert and carrier.
	Mode string
	// Marker is the text that insert puts the payload after (the marker
	// stays).
	Marker string
}

// Rules are a config's [proxy] section.
type Rules struct {
	Taint []Rule
	// Sinks are globs of tool names whose calls are sink attempts.
	Sinks []string

	dflt bool // Taint is DefaultRules', not the config's
}

// DefaultRules taint the first result of any tool that is not a sink,
// appending the payload, and name no sinks.
func DefaultRules() Rules {
	return Rules{Taint: []Rule{{Tool: "*", Nth: 1, Mode: ModeAppend}}, dflt: true}
}

var (
	sectionKeys = []string{"taint", "sinks"}
	ruleKeys    = []string{"tool", "args", "nth", "mode", "marker"}
)

// ParseRules reads the [proxy] section of a config; a config without one
// gets DefaultRules. Errors name the file, the line and the key.
func ParseRules(cfg *matrix.Config) (Rules, error) {
	sec, ok := cfg.Sections["proxy"]
	if !ok {
		return DefaultRules(), nil
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &matrix.Error{File: cfg.Source, Line: cfg.Line(key), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	r := Rules{}
	for _, k := range slices.Sorted(maps.Keys(sec)) {
		if !slices.Contains(sectionKeys, k) {
			bad("proxy."+k, "unknown key in [proxy]%s; valid keys: %s", suggest.Hint(k, sectionKeys), strings.Join(sectionKeys, ", "))
		}
	}
	if v, ok := sec["sinks"]; ok {
		list, ok := stringList(v)
		if !ok {
			bad("proxy.sinks", "want a list of tool names or globs, got %s", method.Describe(v))
		}
		for i, g := range list {
			if err := validGlob(g); err != nil || g == "" {
				bad(fmt.Sprintf("proxy.sinks.%d", i), "%q is not a tool name or glob", g)
			}
		}
		r.Sinks = list
	}
	v, ok := sec["taint"]
	if !ok {
		r.Taint, r.dflt = DefaultRules().Taint, true
		return r, errors.Join(errs...)
	}
	items, ok := v.([]any)
	if !ok {
		if m, isTable := v.(map[string]any); isTable {
			items = []any{m}
		} else {
			bad("proxy.taint", "want a list of rules such as [{ tool = \"read_*\", mode = \"append\" }], got %s", method.Describe(v))
		}
	}
	for i, it := range items {
		key := fmt.Sprintf("proxy.taint.%d", i)
		m, ok := it.(map[string]any)
		if !ok {
			bad(key, "want a rule such as { tool = \"read_*\", mode = \"append\" }, got %s", method.Describe(it))
			continue
		}
		rule := Rule{Tool: "*", Mode: ModeAppend}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			val := m[k]
			switch k {
			case "tool":
				s, ok := val.(string)
				if err := validGlob(s); !ok || s == "" || err != nil {
					bad(key+".tool", "want a tool name or glob, got %s", method.Describe(val))
				}
				rule.Tool = s
			case "args":
				t, ok := val.(map[string]any)
				if !ok {
					bad(key+".args", "want a table of argument globs such as { path = \"*.eml\" }, got %s", method.Describe(val))
					continue
				}
				rule.Args = map[string]string{}
				for ak, av := range t {
					s, ok := av.(string)
					if !ok {
						s = fmt.Sprint(av)
					}
					if err := validGlob(s); err != nil {
						bad(key+".args."+ak, "%q is not a glob: %v", s, err)
					}
					rule.Args[ak] = s
				}
			case "nth":
				n, ok := val.(int64)
				if !ok || n < 0 {
					bad(key+".nth", "want a whole number, 0 (every call) or more, got %s", method.Describe(val))
				}
				rule.Nth = int(n)
			case "mode":
				s, _ := val.(string)
				if !slices.Contains(modes, s) {
					bad(key+".mode", "unknown mode: %s%s; known: %s", method.Describe(val), suggest.Hint(s, modes), strings.Join(modes, ", "))
				}
				rule.Mode = s
			case "marker":
				s, ok := val.(string)
				if !ok || s == "" {
					bad(key+".marker", "want the text to put the payload after, got %s", method.Describe(val))
				}
				rule.Marker = s
			default:
				bad(key+"."+k, "unknown key in a taint rule%s; valid keys: %s", suggest.Hint(k, ruleKeys), strings.Join(ruleKeys, ", "))
			}
		}
		if rule.Mode == ModeInsert && rule.Marker == "" {
			bad(key, "mode insert needs a marker: the text in the tool's result to put the payload after")
		}
		if rule.Mode != ModeInsert && rule.Marker != "" {
			bad(key+".marker", "a marker is used only with mode = \"insert\"")
		}
		r.Taint = append(r.Taint, rule)
	}
	return r, errors.Join(errs...)
}

// IsSink reports whether a tool's calls are sink attempts.
func (r *Rules) IsSink(tool string) bool {
	for _, g := range r.Sinks {
		if globMatch(g, tool) {
			return true
		}
	}
	return false
}

// matches reports whether a call of tool with args falls under the rule
// (before its nth count).
func (r *Rule) matches(tool string, args map[string]any) bool {
	if !globMatch(r.Tool, tool) {
		return false
	}
	for k, g := range r.Args {
		v, ok := args[k]
		if !ok {
			return false
		}
		s, isString := v.(string)
		if !isString {
			s = fmt.Sprint(v)
		}
		if !globMatch(g, s) {
			return false
		}
	}
	return true
}

func stringList(v any) ([]string, bool) {
	items, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// String describes the rule as a config writes it, for messages:
// tool = "read_*", args = { path = "*.eml" }, nth = 2.
func (r *Rule) String() string {
	parts := []string{fmt.Sprintf("tool = %q", r.Tool)}
	if len(r.Args) > 0 {
		var args []string
		for _, k := range slices.Sorted(maps.Keys(r.Args)) {
			args = append(args, fmt.Sprintf("%s = %q", k, r.Args[k]))
		}
		parts = append(parts, "args = { "+strings.Join(args, ", ")+" }")
	}
	if r.Nth > 0 {
		parts = append(parts, fmt.Sprintf("nth = %d", r.Nth))
	}
	return strings.Join(parts, ", ")
}
