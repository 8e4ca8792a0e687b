package toolargs

import (
	"encoding/json"
	"testing"
)

// TestFromSchema: each required parameter gets a value of its type,
// plausible for its name; optional ones get none.
func TestFromSchema(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"to":         map[string]any{"type": "string"},
			"amount":     map[string]any{"type": "number"},
			"count":      map[string]any{"type": "integer"},
			"urgent":     map[string]any{"type": "boolean"},
			"channel":    map[string]any{"type": "string"},
			"user":       map[string]any{"type": "string", "description": "the user's handle"},
			"check_out":  map[string]any{"type": "string"},
			"recipients": map[string]any{"type": "array"},
			"body":       map[string]any{"type": "string"},
			"note":       map[string]any{"type": "string"},
		},
		"required": []any{"to", "amount", "count", "urgent", "channel", "user", "check_out", "recipients", "body"},
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(FromSchema(schema)), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"to": "recipient@example.com", "amount": 1.0, "count": 1.0, "urgent": true, "channel": "#general",
		"user": "@teammate", "check_out": "2025-11-12", "recipients": []any{"recipient@example.com"}, "body": "as requested",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if gb, _ := json.Marshal(got[k]); string(gb) != func() string { b, _ := json.Marshal(v); return string(b) }() {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if FromSchema(nil) != "{}" {
		t.Errorf("no schema: %s, want {}", FromSchema(nil))
	}
}

// TestParamsOrder: parameters come by class, specific shapes before free
// text, then by name.
func TestParamsOrder(t *testing.T) {
	ps := Params(map[string]any{"properties": map[string]any{"body": nil, "id": nil, "to": nil, "amount": nil, "zeta": nil}, "required": []string{"to"}})
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if got := names; len(got) != 5 || got[0] != "id" || got[1] != "to" || got[2] != "amount" || got[3] != "body" || got[4] != "zeta" {
		t.Errorf("order %v", got)
	}
	if !ps[1].Required || ps[0].Required || ps[1].Type != "string" {
		t.Errorf("params %+v", ps)
	}
}
