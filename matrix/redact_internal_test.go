package matrix

import (
	"strings"
	"testing"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/target"
)

// TestRedactCopiesSharedMaps: what a result shares with its cell and with
// other results (method options) is copied before it is redacted, never
// written: other workers read it at the same time.
func TestRedactCopiesSharedMaps(t *testing.T) {
	const key = "sk-shared-0123456789"
	shared := map[string]any{"template": "tool " + key, "n": 3}
	clean := map[string]any{"x": "nothing here"}
	res := Result{
		FinalText:   "answer with " + key,
		MethodSpecs: map[string]Spec{"attack": {Name: "a", Kwargs: shared}, "defense": {Name: "d", Kwargs: clean}},
		Metadata:    map[string]any{"judge_raw": []any{"x", key}, key: true},
		TraceData:   &agent.Trace{Steps: []agent.Step{{Text: "ok"}, {Result: key}}},
	}
	trace := res.TraceData
	specs := res.MethodSpecs
	redactResult(&res, target.NewValueRedactor(key))
	if shared["template"] != "tool "+key || specs["attack"].Kwargs["template"] != "tool "+key || trace.Steps[1].Result != key {
		t.Error("a shared value was written in place")
	}
	if res.FinalText != "answer with "+target.Redacted || res.MethodSpecs["attack"].Kwargs["template"] != "tool "+target.Redacted ||
		res.TraceData.Steps[1].Result != target.Redacted || res.Metadata["judge_raw"].([]any)[1] != target.Redacted {
		t.Errorf("not redacted: %+v", res)
	}
	if _, ok := res.Metadata[target.Redacted]; !ok {
		t.Errorf("map key not redacted: %v", res.Metadata)
	}
	if res.MethodSpecs["defense"].Kwargs["x"] != "nothing here" || res.TraceData.Steps[0].Text != "ok" {
		t.Error("clean values changed")
	}
}

func TestRedactedOptions(t *testing.T) {
	got := redactedOptions(map[string]any{"base_url": "https://user:hunter2-secret-pass@llm.example/v1", "max_tokens": int64(64)})
	if s, _ := got["base_url"].(string); strings.Contains(s, "hunter2") || !strings.Contains(s, "llm.example") || got["max_tokens"] != int64(64) {
		t.Errorf("%v", got)
	}
}
