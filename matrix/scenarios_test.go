package matrix

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// TestBuiltinAsDeclarative: the built-in email scenario, written in TOML
// (examples/scenarios/email.toml), behaves as the built-in does: on every
// attack and channel the same outcome, answer and sink calls.
func TestBuiltinAsDeclarative(t *testing.T) {
	cfg, err := LoadFile("../examples/scenarios/email.toml")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Plan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Runner{Concurrency: 4}.RunAll(context.Background(), cells)
	if err != nil {
		t.Fatal(err)
	}
	byAgent := map[string]map[string]string{}
	for _, r := range res {
		calls, _ := json.Marshal(r.TraceData.SinkCalls)
		k := r.Attack + "/" + r.Channel
		if byAgent[r.Agent] == nil {
			byAgent[r.Agent] = map[string]string{}
		}
		byAgent[r.Agent][k] = fmt.Sprintf("%s | %s | %s", r.Outcome, r.FinalText, calls)
	}
	if len(byAgent["email"]) != 8 || len(byAgent["email_toml"]) != 8 {
		t.Fatalf("cells per agent: %d built-in, %d declarative; want 8 each", len(byAgent["email"]), len(byAgent["email_toml"]))
	}
	for k, want := range byAgent["email"] {
		if got := byAgent["email_toml"][k]; got != want {
			t.Errorf("%s:\n built-in    %s\n declarative %s", k, want, got)
		}
	}
}
