package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/internal/suggest"
	"github.com/pikit-go/pikit/method"
)

// Problem is one fault in a declarative scenario: the key at fault,
// relative to the scenario's table ("tools.1.parameters"), and what is
// wrong with it.
type Problem struct {
	Key string
	Msg string
}

var (
	scenarioKeys = []string{"description", "system", "user_message", "channel", "taint", "tools"}
	taintKeys    = []string{"tool", "call", "mode", "marker", "clean", "args", "also"}
	spotKeys     = []string{"tool", "marker", "clean"}
	toolKeys     = []string{"name", "description", "parameters", "sink", "output", "template", "by_arg", "data"}
	paramTypes   = []string{"string", "number", "integer", "boolean", "array", "object"}
	taintModes   = []string{TaintReplace, TaintInsert, TaintAppend}
	// ScenarioNameRe is what a declarative scenario's name may be.
	ScenarioNameRe = lazy.Regexp(`^[A-Za-z0-9_.-]{1,128}$`)
	placeholderRe  = lazy.Regexp(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// DefaultDeclarativeChannel is the channel of a declarative scenario that
// names none: the payload as it is.
const DefaultDeclarativeChannel = "raw"

// ParseScenario builds a scenario from its table in a dataset or config
// file ([scenarios.NAME]):
//
//	description, system, user_message, channel (default "raw")
//	taint = "tool" or { tool = "...", call = n, mode = "replace|insert|append", marker = "...", clean = "..." }
//	(clean: what the marker stands for where no payload goes; default "";
//	args: the arguments of the taint point's prefetched call; also: more
//	places the payload goes, [{ tool, marker, clean }, ...])
//	[[scenarios.NAME.tools]]
//	name, description, parameters (a JSON Schema object), and either
//	sink = true (with an optional output or template: its confirmation),
//	or a source's output (fixed text), template (text with {arg} filled
//	from the call) or by_arg + data (data[value of that argument], else
//	output)
//
// It returns every problem it finds, each with its key; a scenario comes
// back only when there are none.
func ParseScenario(name string, m map[string]any) (*Scenario, []Problem) {
	var probs []Problem
	bad := func(key, format string, args ...any) {
		probs = append(probs, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if !ScenarioNameRe().MatchString(name) {
		bad("", "a scenario name is 1 to 128 letters, digits, _, - and .")
	}
	if Registry.Check(name) == nil {
		bad("", "%q is a built-in scenario; give yours another name", name)
	}
	sc := &Scenario{Name: name, Channel: DefaultDeclarativeChannel, TaintMode: TaintReplace}
	str := func(key string, v any) string {
		s, ok := v.(string)
		if !ok {
			bad(key, "want a string, got %s", method.Describe(v))
		}
		return s
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "description":
			sc.Description = str(k, v)
		case "system":
			sc.System = str(k, v)
		case "user_message":
			sc.UserMessage = str(k, v)
		case "channel":
			sc.Channel = str(k, v)
		case "taint", "tools":
		default:
			bad(k, "unknown key in a scenario%s; valid keys: %s", suggest.Hint(k, scenarioKeys), strings.Join(scenarioKeys, ", "))
		}
	}
	// A scenario with no taint point is a chat: the payload comes in the
	// user's message, and it needs no tools.
	rawTools, ok := m["tools"].([]any)
	if !ok {
		_, present := m["tools"]
		_, tainted := m["taint"]
		switch {
		case present:
			bad("tools", "want an array of tables ([[scenarios.%s.tools]]), got %s", name, method.Describe(m["tools"]))
		case tainted:
			bad("tools", "a scenario with a taint point needs tools: add [[scenarios.%s.tools]] tables, the taint point among them", name)
		}
	}
	var taintTool *Tool
	for i, rt := range rawTools {
		key := fmt.Sprintf("tools.%d", i)
		tm, ok := rt.(map[string]any)
		if !ok {
			bad(key, "want a table, got %s", method.Describe(rt))
			continue
		}
		t, tp := parseTool(tm)
		for _, p := range tp {
			p.Key = join(key, p.Key)
			probs = append(probs, p)
		}
		if t.Name != "" && slices.ContainsFunc(sc.Tools, func(o Tool) bool { return o.Name == t.Name }) {
			bad(key+".name", "a second tool named %q", t.Name)
		}
		sc.Tools = append(sc.Tools, t)
	}
	switch tv := m["taint"].(type) {
	case nil:
	case string:
		sc.TaintPoint = tv
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(tv)) {
			v := tv[k]
			switch k {
			case "tool":
				sc.TaintPoint = str("taint.tool", v)
			case "call":
				n, ok := v.(int64)
				if !ok || n < 0 {
					bad("taint.call", "want a whole number, 0 (every call) or more, got %s", method.Describe(v))
				}
				sc.TaintCall = int(n)
			case "mode":
				sc.TaintMode = str("taint.mode", v)
				if !slices.Contains(taintModes, sc.TaintMode) {
					bad("taint.mode", "unknown mode %q%s; known: %s", sc.TaintMode, suggest.Hint(sc.TaintMode, taintModes), strings.Join(taintModes, ", "))
				}
			case "marker":
				sc.TaintMarker = str("taint.marker", v)
			case "clean":
				sc.TaintClean = str("taint.clean", v)
			case "args":
				if m, ok := v.(map[string]any); ok {
					sc.TaintArgs = m
				} else {
					bad("taint.args", "want a table of the prefetched call's arguments, got %s", method.Describe(v))
				}
			case "also":
				list, ok := v.([]any)
				if !ok {
					bad("taint.also", "want a list of { tool, marker, clean }, got %s", method.Describe(v))
				}
				for i, e := range list {
					key := fmt.Sprintf("taint.also.%d", i)
					em, ok := e.(map[string]any)
					if !ok {
						bad(key, "want { tool, marker, clean }, got %s", method.Describe(e))
						continue
					}
					var sp TaintSpot
					for _, ek := range slices.Sorted(maps.Keys(em)) {
						switch ek {
						case "tool":
							sp.Tool = str(key+".tool", em[ek])
						case "marker":
							sp.Marker = str(key+".marker", em[ek])
						case "clean":
							sp.Clean = str(key+".clean", em[ek])
						default:
							bad(key+"."+ek, "unknown key%s; valid keys: %s", suggest.Hint(ek, spotKeys), strings.Join(spotKeys, ", "))
						}
					}
					sc.TaintAlso = append(sc.TaintAlso, sp)
				}
			default:
				bad("taint."+k, "unknown key in taint%s; valid keys: %s", suggest.Hint(k, taintKeys), strings.Join(taintKeys, ", "))
			}
		}
		if sc.TaintPoint == "" {
			bad("taint", "name the source tool that carries the payload: taint = { tool = \"...\" }")
		}
	default:
		bad("taint", "want a tool name or { tool = \"...\", call = n, mode = \"...\", marker = \"...\" }, got %s", method.Describe(tv))
	}
	if sc.TaintPoint != "" {
		i := slices.IndexFunc(sc.Tools, func(t Tool) bool { return t.Name == sc.TaintPoint })
		names := make([]string, len(sc.Tools))
		for j, t := range sc.Tools {
			names[j] = t.Name
		}
		switch {
		case i < 0:
			bad("taint", "names no tool of the scenario: %q%s; its tools: %s", sc.TaintPoint, suggest.Hint(sc.TaintPoint, names), strings.Join(names, ", "))
		case sc.Tools[i].Sink:
			bad("taint", "%q is a sink; the payload enters through a source tool", sc.TaintPoint)
		default:
			taintTool = &sc.Tools[i]
		}
	}
	if sc.TaintMode == TaintInsert && sc.TaintMarker == "" {
		bad("taint", "mode insert needs a marker: the text in the tool's output that the payload replaces")
	}
	if sc.TaintMarker != "" && sc.TaintMode != TaintInsert {
		bad("taint.marker", "a marker is used only with mode = \"insert\"")
	}
	for i, sp := range sc.TaintAlso {
		key := fmt.Sprintf("taint.also.%d", i)
		j := slices.IndexFunc(sc.Tools, func(t Tool) bool { return t.Name == sp.Tool })
		switch {
		case sc.TaintMode != TaintInsert:
			bad(key, "more places for the payload need mode = \"insert\"")
		case sp.Marker == "":
			bad(key+".marker", "missing: the text in %s's output the payload replaces", sp.Tool)
		case j < 0:
			bad(key+".tool", "names no tool of the scenario: %q", sp.Tool)
		case sc.Tools[j].Sink:
			bad(key+".tool", "%q is a sink; the payload enters through a source tool", sp.Tool)
		case !strings.Contains(sc.Tools[j].text, sp.Marker):
			bad(key+".marker", "%q is nowhere in the output of %s", sp.Marker, sp.Tool)
		}
	}
	if sc.TaintClean != "" && sc.TaintMarker == "" {
		bad("taint.clean", "is what the marker stands for in a clean run: it needs mode = \"insert\" and a marker")
	}
	if taintTool != nil && sc.TaintMode == TaintInsert && sc.TaintMarker != "" && !strings.Contains(taintTool.text, sc.TaintMarker) {
		bad("taint.marker", "%q is nowhere in the output of %s: the payload would only be appended", sc.TaintMarker, sc.TaintPoint)
	}
	if sc.TaintPoint == "" {
		sc.Channel = "" // a direct-injection scenario
	}
	if len(probs) > 0 {
		return nil, probs
	}
	sc.defs, sc.defsOf = buildDefinitions(sc.Tools), sc.Tools
	return sc, nil
}

// parseTool builds one declarative tool. The returned tool's text holds
// every output text it may give, for checking a taint marker.
func parseTool(m map[string]any) (Tool, []Problem) {
	var probs []Problem
	bad := func(key, format string, args ...any) {
		probs = append(probs, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	str := func(key string) string {
		v, present := m[key]
		if !present {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			bad(key, "want a string, got %s", method.Describe(v))
		}
		return s
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(toolKeys, k) {
			bad(k, "unknown key in a tool%s; valid keys: %s", suggest.Hint(k, toolKeys), strings.Join(toolKeys, ", "))
		}
	}
	t := Tool{Name: str("name"), Description: str("description")}
	if t.Name == "" {
		bad("name", "a tool needs a name")
	} else if !ScenarioNameRe().MatchString(t.Name) || len(t.Name) > 64 {
		bad("name", "%q: a tool name is 1 to 64 letters, digits, _, - and .", t.Name)
	}
	if v, ok := m["sink"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			bad("sink", "want true or false, got %s", method.Describe(v))
		}
		t.Sink = b
	}
	schema, ok := m["parameters"].(map[string]any)
	if !ok {
		if _, present := m["parameters"]; present {
			bad("parameters", "want a JSON Schema object such as { type = \"object\", properties = { to = { type = \"string\" } } }, got %s", method.Describe(m["parameters"]))
		} else {
			bad("parameters", "a tool needs parameters: a JSON Schema object ({ type = \"object\", properties = { ... } }; properties = {} for none)")
		}
	}
	var props map[string]any
	if schema != nil {
		if typ, _ := schema["type"].(string); typ != "object" {
			bad("parameters.type", "want \"object\": a tool's parameters are an object's properties")
		}
		props, _ = schema["properties"].(map[string]any)
		if _, present := schema["properties"]; present && props == nil {
			bad("parameters.properties", "want a table of the parameters' schemas")
		}
		var required []string
		if r, present := schema["required"]; present {
			list, ok := r.([]any)
			for _, it := range list {
				s, isString := it.(string)
				if !isString {
					ok = false
					break
				}
				required = append(required, s)
			}
			if !ok {
				bad("parameters.required", "want a list of parameter names, got %s", method.Describe(r))
			}
		}
		for _, r := range required {
			if _, ok := props[r]; !ok {
				bad("parameters.required", "%q is required but not among the properties", r)
			}
		}
		for _, pn := range slices.Sorted(maps.Keys(props)) {
			ps, _ := props[pn].(map[string]any)
			typ, _ := ps["type"].(string)
			if ps == nil || !slices.Contains(paramTypes, typ) {
				bad("parameters.properties."+pn, "want a schema with a type (%s)", strings.Join(paramTypes, ", "))
				continue
			}
			desc, _ := ps["description"].(string)
			t.Params = append(t.Params, Param{Name: pn, Type: typ, Description: desc, Required: slices.Contains(required, pn)})
		}
		t.Schema = jsonSchema(schema)
		t.AllowExtra, _ = schema["additionalProperties"].(bool)
	}
	output, template, byArg := str("output"), str("template"), str("by_arg")
	var data map[string]string
	if v, present := m["data"]; present {
		dm, ok := v.(map[string]any)
		if !ok {
			bad("data", "want a table of argument values to outputs, got %s", method.Describe(v))
		}
		data = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(dm)) {
			s, ok := dm[k].(string)
			if !ok {
				bad("data."+k, "want a string, got %s", method.Describe(dm[k]))
			}
			data[k] = s
		}
	}
	_, hasOutput := m["output"]
	source := template != "" || byArg != "" || data != nil
	switch {
	case t.Sink && (byArg != "" || data != nil):
		bad("sink", "a sink that is also a source: a sink records its calls and answers its output or template; drop by_arg and data, or sink = true")
	case !t.Sink && !source && !hasOutput:
		bad("output", "a source tool needs output (fixed text), template (text with {arg} from the call) or by_arg with data; a tool that acts is sink = true")
	case (byArg == "") != (data == nil):
		bad("by_arg", "by_arg and data go together: data[the value of argument by_arg], else output")
	}
	if byArg != "" && props != nil {
		if _, ok := props[byArg]; !ok {
			bad("by_arg", "%q is not one of the tool's parameters", byArg)
		}
	}
	if template != "" {
		for _, mm := range placeholderRe().FindAllStringSubmatch(template, -1) {
			if _, ok := props[mm[1]]; !ok {
				bad("template", "{%s} names no parameter of the tool", mm[1])
			}
		}
	}
	t.text = output + template
	for _, v := range data {
		t.text += v
	}
	switch {
	case t.Sink && template == "":
		confirm := output
		if confirm == "" {
			confirm = fmt.Sprintf("%s: done.", t.Name)
		}
		t.Output = func(map[string]any) string { return confirm }
	case template != "":
		t.Output = func(args map[string]any) string {
			return placeholderRe().ReplaceAllStringFunc(template, func(ph string) string {
				return ArgText(args[ph[1:len(ph)-1]])
			})
		}
	case byArg != "":
		t.Output = func(args map[string]any) string {
			if s, ok := data[ArgText(args[byArg])]; ok {
				return s
			}
			return output
		}
	default:
		t.Output = func(map[string]any) string { return output }
	}
	return t, probs
}

// ArgText is an argument as text in a tool's output, and as the key a
// by_arg source looks its data up with: a string as it is, anything else
// as JSON.
func ArgText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// jsonSchema converts a decoded TOML table into JSON Schema values: TOML
// integers become JSON numbers as encoding/json would decode them.
func jsonSchema(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = jsonValue(v)
	}
	return out
}

func jsonValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return jsonSchema(x)
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			out[i] = jsonValue(it)
		}
		return out
	case int64:
		return float64(x)
	}
	return v
}

func join(a, b string) string {
	if b == "" {
		return a
	}
	return a + "." + b
}
