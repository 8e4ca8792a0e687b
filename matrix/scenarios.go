package matrix

import (
	"fmt"
	"sort"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/method"
)

// ParseScenarios decodes the declarative scenarios of a dataset or config
// file: [scenarios.NAME] tables, or [[scenarios]] tables each with a name.
// lines gives a document path's line (nil when unknown); prefix is the
// table's path ("scenarios"). It returns the scenarios by name and their
// tables as decoded (for cell keys), or every problem as an *Error with
// the file, line and key.
func ParseScenarios(file string, v any, lines func(string) int, prefix string) (map[string]*agent.Scenario, map[string]any, error) {
	line := func(path string) int {
		if lines == nil {
			return 0
		}
		return lines(path)
	}
	var errs errorList
	bad := func(path, msg string) {
		errs.add(&Error{File: file, Line: line(path), Key: path, Msg: msg})
	}
	type entry struct {
		name, path string
		table      map[string]any
	}
	var entries []entry
	switch x := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(x))
		for n := range x {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			t, ok := x[n].(map[string]any)
			if !ok {
				bad(prefix+"."+n, fmt.Sprintf("want a table ([%s.%s]), got %s", prefix, n, method.Describe(x[n])))
				continue
			}
			entries = append(entries, entry{n, prefix + "." + n, t})
		}
	case []any:
		for i, it := range x {
			path := fmt.Sprintf("%s.%d", prefix, i)
			t, ok := it.(map[string]any)
			if !ok {
				bad(path, "want a table ([[scenarios]])")
				continue
			}
			n, _ := t["name"].(string)
			if n == "" {
				bad(path, "a [[scenarios]] table needs a name")
				continue
			}
			rest := make(map[string]any, len(t))
			for k, v := range t {
				if k != "name" {
					rest[k] = v
				}
			}
			entries = append(entries, entry{n, path, rest})
		}
	default:
		bad(prefix, fmt.Sprintf("want [scenarios.NAME] tables, got %s", method.Describe(v)))
	}
	out := map[string]*agent.Scenario{}
	raw := map[string]any{}
	for _, e := range entries {
		if _, dup := out[e.name]; dup {
			bad(e.path, fmt.Sprintf("a second scenario named %q", e.name))
			continue
		}
		sc, probs := agent.ParseScenario(e.name, e.table)
		for _, p := range probs {
			path := e.path
			if p.Key != "" {
				path += "." + p.Key
			}
			bad(path, p.Msg)
		}
		if sc != nil {
			out[e.name] = sc
			raw[e.name] = e.table
		}
	}
	if err := errs.err(); err != nil {
		return nil, nil, err
	}
	return out, raw, nil
}
