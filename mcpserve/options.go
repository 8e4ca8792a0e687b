package mcpserve

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/internal/suggest"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/method"
)

// Poison says where the server puts the payload.
type Poison string

// Poison modes.
const (
	// PoisonResult puts the tainted delivery in the poisoned tool's
	// result, as pikit's own scenarios do.
	PoisonResult Poison = "result"
	// PoisonDescription puts the payload in the poisoned tool's
	// description (or one of its parameters' descriptions), which a client
	// shows its model before any tool runs.
	PoisonDescription Poison = "description"
	// PoisonRugPull lists clean descriptions first, then swaps in the
	// poisoned one and tells the client (notifications/tools/list_changed).
	PoisonRugPull Poison = "rug_pull"
)

// Poisons are the poison modes, as a config spells them.
var Poisons = []Poison{PoisonResult, PoisonDescription, PoisonRugPull}

// ParsePoison reads a poison mode; "rug-pull", the flag's spelling, is
// rug_pull, and "" is result.
func ParsePoison(s string) (Poison, error) {
	switch s {
	case "", string(PoisonResult):
		return PoisonResult, nil
	case string(PoisonDescription):
		return PoisonDescription, nil
	case string(PoisonRugPull), "rug-pull":
		return PoisonRugPull, nil
	}
	names := make([]string, len(Poisons))
	for i, p := range Poisons {
		names[i] = string(p)
	}
	return "", fmt.Errorf("unknown poison mode %q%s; known: %s", s, suggest.Hint(s, names), strings.Join(names, ", "))
}

// Options are the settings of a config's [mcp] section.
type Options struct {
	// Poison is where the payload goes; "" is PoisonResult.
	Poison Poison
	// Tool is the poisoned tool; "" is the scenario's taint point.
	Tool string
	// Param, in the description modes, names the parameter whose
	// description carries the payload; "" is the tool's own description.
	Param string
}

// Section is the name of the config section the options are read from.
const Section = "mcp"

// Keys are the keys an [mcp] section may hold.
var Keys = []string{"poison", "poison_param", "poison_tool"}

// ParseOptions reads cfg's [mcp] section (no section gives the defaults).
// A bad key or value is a *matrix.Error naming the file, the line and what
// would be valid.
func ParseOptions(cfg *matrix.Config) (Options, error) {
	var o Options
	sec := cfg.Sections[Section]
	bad := func(key, format string, args ...any) error {
		return &matrix.Error{File: cfg.Source, Line: cfg.Line(Section + "." + key), Case: cfg.CaseID, Key: Section + "." + key, Msg: fmt.Sprintf(format, args...)}
	}
	keys := make([]string, 0, len(sec))
	for k := range sec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := sec[k]
		if !slices.Contains(Keys, k) {
			return o, bad(k, "unknown key in [%s]%s; valid keys: %s", Section, suggest.Hint(k, Keys), strings.Join(Keys, ", "))
		}
		s, ok := v.(string)
		if !ok {
			return o, bad(k, "want a string, got %s", method.Describe(v))
		}
		switch k {
		case "poison":
			p, err := ParsePoison(s)
			if err != nil {
				return o, bad(k, "%v", err)
			}
			o.Poison = p
		case "poison_tool":
			o.Tool = s
		case "poison_param":
			o.Param = s
		}
	}
	if o.Poison == "" {
		o.Poison = PoisonResult
	}
	return o, nil
}

// OptionError is an option that does not fit a scenario. Key is the
// [mcp] key at fault ("poison", "poison_tool", "poison_param"), or "" when
// the scenario itself cannot be served.
type OptionError struct {
	Key string
	Msg string
}

func (e *OptionError) Error() string {
	if e.Key == "" {
		return e.Msg
	}
	return e.Key + ": " + e.Msg
}

// Resolve checks the options against a scenario and fills in the default
// poisoned tool (the scenario's taint point). The error is an
// *OptionError saying what would be valid.
func (o Options) Resolve(sc *agent.Scenario) (Options, error) {
	if o.Poison == "" {
		o.Poison = PoisonResult
	}
	if _, err := ParsePoison(string(o.Poison)); err != nil {
		return o, &OptionError{Key: "poison", Msg: err.Error()}
	}
	if len(sc.Tools) == 0 {
		return o, &OptionError{Msg: fmt.Sprintf("agent %s has no tools to serve over MCP; tool agents: %s", sc.Name, strings.Join(ToolAgents(), ", "))}
	}
	if o.Tool == "" {
		o.Tool = sc.TaintPoint
	}
	t, ok := sc.Tool(o.Tool)
	if !ok {
		names := toolNames(sc.Tools)
		return o, &OptionError{Key: "poison_tool", Msg: fmt.Sprintf("agent %s has no tool %q%s; its tools: %s", sc.Name, o.Tool, suggest.Hint(o.Tool, names), strings.Join(names, ", "))}
	}
	if o.Poison == PoisonResult {
		if t.Sink {
			return o, &OptionError{Key: "poison_tool", Msg: fmt.Sprintf("%s is a sink, and a sink's result is never tainted; choose a source tool of %s (%s), or poison = %q", t.Name, sc.Name, strings.Join(sourceNames(sc), ", "), PoisonDescription)}
		}
		if o.Param != "" {
			return o, &OptionError{Key: "poison_param", Msg: fmt.Sprintf("applies to poison = %q and %q, not %q", PoisonDescription, PoisonRugPull, PoisonResult)}
		}
	}
	if o.Param != "" && !slices.ContainsFunc(t.Params, func(p agent.Param) bool { return p.Name == o.Param }) {
		names := make([]string, len(t.Params))
		for i, p := range t.Params {
			names[i] = p.Name
		}
		if len(names) == 0 {
			return o, &OptionError{Key: "poison_param", Msg: fmt.Sprintf("%s takes no parameters; leave poison_param out to poison its description", t.Name)}
		}
		return o, &OptionError{Key: "poison_param", Msg: fmt.Sprintf("%s has no parameter %q%s; its parameters: %s", t.Name, o.Param, suggest.Hint(o.Param, names), strings.Join(names, ", "))}
	}
	return o, nil
}

// ToolAgents returns the names of the registered scenarios that have tools
// (every one but the direct-injection chat), sorted.
func ToolAgents() []string {
	var out []string
	for _, name := range agent.Names() {
		if sc, err := agent.Lookup(name); err == nil && len(sc.Tools) > 0 && !sc.Direct() {
			out = append(out, name)
		}
	}
	return out
}

func toolNames(ts []agent.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func sourceNames(sc *agent.Scenario) []string {
	var out []string
	for _, t := range sc.Tools {
		if !t.Sink {
			out = append(out, t.Name)
		}
	}
	return out
}
