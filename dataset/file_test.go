package dataset

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/pikit-go/pikit/internal/termsafe"
)

func TestEncodeRoundTrips(t *testing.T) {
	hostile := "say \"hi\" \\ then\nnew line\ttab \x1b[31m red \u202e rtl \x7f"
	d := &File{
		Meta: Meta{Name: "demo", Description: hostile, Reference: "fixture"},
		Scenarios: []Scenario{{
			Name: "Inbox.v1", System: "sys", UserMessage: "read it", Channel: "raw",
			Taint: Taint{Tool: "read", Mode: "insert", Marker: "<X>", Call: 2},
			Tools: []Tool{
				{Name: "read", Description: "reads", Parameters: map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"}}, Output: "mail <X>"},
				{Name: "send", Sink: true, Parameters: map[string]any{"type": "object"}, Output: "sent"},
				{Name: "lookup", Parameters: map[string]any{"type": "object"}, ByArg: "k", Data: map[string]string{"a b": "1", "c": "2"}},
			},
		}},
		Cases: []FileCase{{ID: "c-1", Description: "d", Reference: "file.json#0", Config: map[string]any{
			"agents": []string{"Inbox.v1"}, "attacks": []string{"naive"}, "task": hostile,
			"sink_args": map[string]any{"to": "x@example.com"}, "repeats": 2, "temperature": 0.5, "require_sink": true,
		}}},
	}
	var b bytes.Buffer
	if _, err := Encode(&b, "demo.toml", d); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := toml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	meta := got["meta"].(map[string]any)
	if meta["description"] != hostile {
		t.Errorf("description %q", meta["description"])
	}
	sc := got["scenarios"].(map[string]any)["Inbox.v1"].(map[string]any)
	if sc["taint"].(map[string]any)["marker"] != "<X>" || len(sc["tools"].([]any)) != 3 {
		t.Errorf("scenario %v", sc)
	}
	c := got["cases"].([]any)[0].(map[string]any)
	if c["task"] != hostile || c["repeats"] != int64(2) || c["temperature"] != 0.5 || c["require_sink"] != true {
		t.Errorf("case %v", c)
	}
	if strings.ContainsRune(b.String(), '\x1b') {
		t.Error("a control character was written raw")
	}
	var again bytes.Buffer
	if _, err := Encode(&again, "demo.toml", d); err != nil {
		t.Fatal(err)
	}
	if again.String() != b.String() {
		t.Error("Encode is not deterministic")
	}
}

func TestEncodeRefusesBadNames(t *testing.T) {
	if _, err := Encode(&bytes.Buffer{}, "bad.toml", &File{Scenarios: []Scenario{{Name: "a b]"}}}); err == nil {
		t.Fatal("a scenario name that is not a key was written")
	}
}

// hostile is text a hostile benchmark file could carry: bidi overrides
// and isolates, invisible characters, terminal controls, separators.
const hostile = "pay \u202eevil.example\u202c \u2066x\u2069 zero\u200bwidth \ufeff \x1b[31mred\x1b[0m \u009b2J \u2028 \U000E0041 end"

// TestEncodeEscapesHostileText (issue 24): every text field a benchmark
// gives is written with each control, bidi and invisible character
// escaped, and the file loads back, through the parser users' files go
// through, to the same values.
func TestEncodeEscapesHostileText(t *testing.T) {
	d := &File{
		Comment:   "where it comes from: " + hostile + "\n[[cases]]\nid = \"injected\"\n\n" + hostile,
		Benchmark: "hostile",
		Meta:      Meta{Name: "hostile", Description: hostile, Reference: hostile},
		Scenarios: []Scenario{{
			Name: "desk", Description: hostile, System: hostile, UserMessage: hostile + " <M>", Channel: "raw",
			Taint: Taint{Tool: "read", Mode: "insert", Marker: "<M>", Clean: hostile},
			Tools: []Tool{
				{Name: "read", Description: hostile, Parameters: map[string]any{"type": "object", "properties": map[string]any{}}, Output: hostile + " <M>"},
				{Name: "send", Description: hostile, Sink: true, Output: hostile, Parameters: map[string]any{"type": "object", "properties": map[string]any{"to": map[string]any{"type": "string", "description": hostile}}}},
			},
		}},
		Cases: []FileCase{{ID: "h1", Description: hostile, Reference: hostile, Config: map[string]any{
			"agents": []string{"desk"}, "attacks": []string{"naive"}, "task": hostile, "canary": hostile,
			"sink_args": map[string]any{"to": hostile}, "labels": map[string]any{"kind": hostile},
		}}},
	}
	var b strings.Builder
	ds, err := Encode(&b, "hostile.toml", d)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range b.String() {
		if r != '\n' && termsafe.Unsafe(r) {
			t.Fatalf("byte %d: %U written raw", i, r)
		}
	}
	// The comment's lines stay comments: the TOML in it starts no case.
	for _, line := range strings.Split(b.String(), "\n")[:5] {
		if !strings.HasPrefix(line, "#") {
			t.Fatalf("a comment line is not a comment: %q\n%s", line, b.String())
		}
	}
	if again, err := Parse("hostile.toml", []byte(b.String())); err != nil || len(again.Cases) != 1 || len(ds.Cases) != 1 {
		t.Fatalf("read back: %v", err)
	}
	c := ds.Cases[0]
	if ds.Description != hostile || c.Description != hostile || c.Reference != hostile || c.Config.Task != hostile ||
		c.Config.Canary != hostile || c.Config.SinkArgs["to"] != hostile || c.Config.Labels["kind"] != hostile {
		t.Errorf("read back differently: %+v", c)
	}
	sc := c.Config.Scenarios["desk"]
	if sc == nil || sc.System != hostile || sc.Description != hostile {
		t.Fatalf("scenario read back differently: %+v", sc)
	}
}
