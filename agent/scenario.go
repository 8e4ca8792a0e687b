package agent

import (
	"fmt"
	"sort"

	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/method"
	"github.com/pikit-go/pikit/target"
)

// Param is one parameter of a tool.
type Param struct {
	Name        string
	Type        string // JSON Schema type: "string", "number", "integer", "boolean"
	Description string
	Required    bool
}

// Tool is a tool a scenario offers. A source tool returns data (Output);
// a sink records the call and returns a confirmation (Output), never acting.
type Tool struct {
	Name        string
	Description string
	Params      []Param
	Sink        bool
	// Output returns what the tool answers for the given arguments: the
	// clean data of a source tool, the confirmation of a sink.
	Output func(args map[string]any) string
	// text is every output a declarative tool may give (for checks).
	text string
	// AllowExtra accepts arguments beyond Params (a declarative tool whose
	// schema says additionalProperties = true); they are not checked.
	AllowExtra bool
	// Schema, when set, is the parameters' JSON Schema as the model is
	// offered it (a declarative tool's, with nested types Params cannot
	// say); Params still check the calls.
	Schema map[string]any
}

// Definition returns the tool as a target.Tool with a JSON Schema.
func (t Tool) Definition() target.Tool {
	if t.Schema != nil {
		return target.Tool{Name: t.Name, Description: t.Description, Parameters: t.Schema}
	}
	props := map[string]any{}
	required := []string{}
	for _, p := range t.Params {
		props[p.Name] = map[string]any{"type": p.Type, "description": p.Description}
		if p.Required {
			required = append(required, p.Name)
		}
	}
	schema := map[string]any{"type": "object", "properties": props, "required": required}
	return target.Tool{Name: t.Name, Description: t.Description, Parameters: schema}
}

// Check validates arguments against the tool's parameters. It reports the
// first missing required parameter, else the first bad argument in name
// order (an unknown name cut to 64 bytes: it comes from model output);
// valid arguments (the usual case) are checked without sorting. pikit's
// loop and the MCP server both check calls with it.
func (t Tool) Check(args map[string]any) error {
	for _, p := range t.Params {
		if _, ok := args[p.Name]; p.Required && !ok {
			return fmt.Errorf("missing required argument %q", p.Name)
		}
	}
	valid := true
	for k, v := range args {
		if p, ok := t.param(k); (!ok && !t.AllowExtra) || (ok && !typeMatches(p.Type, v)) {
			valid = false
			break
		}
	}
	if valid {
		return nil
	}
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p, ok := t.param(k)
		if !ok && t.AllowExtra {
			continue
		}
		if !ok {
			return fmt.Errorf("unknown argument %q", textcut.Clip(k, 64, "…"))
		}
		if !typeMatches(p.Type, args[k]) {
			return fmt.Errorf("argument %q must be a %s", k, p.Type)
		}
	}
	return nil
}

// param looks up a parameter by name; of two with one name, the last wins.
func (t Tool) param(name string) (Param, bool) {
	for i := len(t.Params) - 1; i >= 0; i-- {
		if t.Params[i].Name == name {
			return t.Params[i], true
		}
	}
	return Param{}, false
}

func typeMatches(typ string, v any) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

// Scenario is an agent setting: what the assistant is for, the tools it has,
// where attacker data enters, and the defaults a config can override.
type Scenario struct {
	Name        string
	Description string
	System      string // the assistant's system prompt
	UserMessage string // the default user request
	Tools       []Tool
	TaintPoint  string // the source tool whose output carries the payload ("" for chat)
	Channel     string // the default channel for indirect injection
	// TaintCall, when positive, taints only the taint point's nth call in
	// a run (1 for the first); 0 taints every call.
	TaintCall int
	// TaintMode says how the crafted text meets the taint point's own
	// output: TaintReplace (the default), TaintInsert (in place of
	// TaintMarker, which clean runs remove) or TaintAppend.
	TaintMode   string
	TaintMarker string
	// TaintClean is the text TaintMarker stands for where no payload goes
	// (a clean run, a marker the payload did not take): the tool's own
	// text at that place, which a payload replaces ("" for none).
	TaintClean string
	// TaintArgs, when set, are the arguments of the taint point's call the
	// harness makes before the model's first turn (agent.Input.Prefetch):
	// the call a benchmark puts in the history, as InjecAgent does; without
	// them each required parameter gets a placeholder.
	TaintArgs map[string]any
	// TaintAlso are more places the same payload goes, as a benchmark that
	// injects every candidate place of a task at once (AgentDojo): each a
	// marker in a source tool's output, replaced by the payload in every
	// call of an attacked run, and by its clean text otherwise.
	TaintAlso []TaintSpot

	// defs are the tools' definitions, built once by Register for the
	// Tools slice in defsOf; every run of the scenario shares them
	// read-only.
	defs   []target.Tool
	defsOf []Tool
}

// definitions returns the tools as the model is offered them. A registered
// scenario shares the definitions Register built (clipped, so a target that
// appends to its request's tools copies them); any other scenario, or one
// whose Tools slice was replaced since, builds them afresh.
func (s *Scenario) definitions() []target.Tool {
	if s.defs != nil && len(s.defsOf) == len(s.Tools) && &s.defsOf[0] == &s.Tools[0] {
		return s.defs[:len(s.defs):len(s.defs)]
	}
	return buildDefinitions(s.Tools)
}

// buildDefinitions returns the definitions of tools, nil for none.
func buildDefinitions(tools []Tool) []target.Tool {
	if len(tools) == 0 {
		return nil
	}
	defs := make([]target.Tool, len(tools))
	for i, t := range tools {
		defs[i] = t.Definition()
	}
	return defs
}

// Tool looks up one of the scenario's tools.
func (s *Scenario) Tool(name string) (Tool, bool) {
	for _, t := range s.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Sinks returns the names of the scenario's sink tools.
func (s *Scenario) Sinks() []string {
	var out []string
	for _, t := range s.Tools {
		if t.Sink {
			out = append(out, t.Name)
		}
	}
	return out
}

// TaintSpot is one more place a scenario's payload goes: Marker in the
// output of the source tool Tool, standing for Clean where no payload goes.
type TaintSpot struct {
	Tool, Marker, Clean string
}

// Direct reports whether the scenario takes only direct injection (no taint
// point).
func (s *Scenario) Direct() bool { return s.TaintPoint == "" }

// Taint modes of a scenario.
const (
	TaintReplace = "replace"
	TaintInsert  = "insert"
	TaintAppend  = "append"
)

// Registry holds every registered scenario, keyed by agent name.
var Registry = method.NewRegistry[*Scenario]("agent")

// Register adds a scenario; it panics on a duplicate name or a taint point
// that is not one of its source tools. It builds the tools' definitions
// once, so s and its Tools must not change afterwards.
func Register(s *Scenario) {
	if s.TaintPoint != "" {
		t, ok := s.Tool(s.TaintPoint)
		if !ok || t.Sink {
			panic(fmt.Sprintf("agent: scenario %s: taint point %q is not one of its source tools", s.Name, s.TaintPoint))
		}
	}
	s.defs, s.defsOf = buildDefinitions(s.Tools), s.Tools
	Registry.Register(method.Info{Name: s.Name, Description: s.Description}, func(method.Args) (*Scenario, error) { return s, nil })
}

// Lookup returns the named scenario; the error wraps method.ErrUnknown.
func Lookup(name string) (*Scenario, error) { return Registry.New(name, nil, 0) }

// Names returns the registered agent names, sorted.
func Names() []string { return Registry.Names() }
