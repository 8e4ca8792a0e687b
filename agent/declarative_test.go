package agent

import "testing"

func TestDeclarativeToolArguments(t *testing.T) {
	for _, tc := range []struct {
		extra bool
		args  map[string]any
		ok    bool
	}{
		{false, map[string]any{"q": "x"}, true},
		{false, map[string]any{"q": "x", "other": 1.0}, false},
		{true, map[string]any{"q": "x", "other": 1.0}, true},
		{true, map[string]any{"q": 2.0}, false}, // declared ones are still checked
		{true, map[string]any{}, false},         // and required
	} {
		schema := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}}
		if tc.extra {
			schema["additionalProperties"] = true
		}
		tool, probs := parseTool(map[string]any{"name": "find", "parameters": schema, "output": "ok"})
		if len(probs) > 0 {
			t.Fatal(probs)
		}
		if err := tool.Check(tc.args); (err == nil) != tc.ok {
			t.Errorf("additionalProperties %v, args %v: %v", tc.extra, tc.args, err)
		}
	}
}
