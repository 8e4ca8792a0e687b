package importer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/internal/termsafe"
)

func TestWriteRoundTrips(t *testing.T) {
	hostile := "say \"hi\" \\ then\nnew line\ttab \x1b[31m red \u202e rtl \x7f"
	d := &Dataset{
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
		Cases: []Case{{ID: "c-1", Description: "d", Reference: "file.json#0", Config: map[string]any{
			"agents": []string{"Inbox.v1"}, "attacks": []string{"naive"}, "task": hostile,
			"sink_args": map[string]any{"to": "x@example.com"}, "repeats": 2, "temperature": 0.5, "require_sink": true,
		}}},
	}
	var b bytes.Buffer
	if err := Write(&b, d); err != nil {
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
	Write(&again, d)
	if again.String() != b.String() {
		t.Error("Write is not deterministic")
	}
}

func TestWriteRefusesBadNames(t *testing.T) {
	if err := Write(&bytes.Buffer{}, &Dataset{Scenarios: []Scenario{{Name: "a b]"}}}); err == nil {
		t.Fatal("a scenario name that is not a key was written")
	}
}

// TestOptionsFromSet: every importer's options are declared in the
// registry, given as KEY=VALUE texts and typed from the declaration; a
// bad key or value is an error naming it and what is valid.
func TestOptionsFromSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string // "" for no error
	}{
		{"bipia", []string{"split=test", "tasks=email", "positions=end,start", "layout=tool", "limit=3", "middle_seed=-4"}, ""},
		{"bipia", []string{"colour=x"}, `option "colour": not an option of this method`},
		{"bipia", []string{"middle_seed=1.5"}, `option "middle_seed": want a whole number, got "1.5"`},
		{"bipia", []string{"layout=table"}, `"table" is not one of the choices`},
		{"bipia", []string{"limit=-1"}, "want 0 or more"},
		{"injecagent", []string{"protocol=react"}, ""},
		{"injecagent", []string{"protocol=xml"}, `"xml" is not one of the choices`},
		{"llmail", []string{"successful=yes", "keep_duplicates"}, ""},
		{"llmail", []string{"successful=maybe"}, `want true or false, got "maybe"`},
		{"spikee", []string{"format=full-prompt", "data_marker=none", "match_languages=false"}, ""},
		{"mcptox", []string{"include_wrong=true", "risks=Privacy Leakage"}, ""},
		{"agentdojo", []string{"limit=3"}, "this method takes no options"},
		{"agentdojoo", nil, `unknown benchmark "agentdojoo" (did you mean agentdojo?)`},
		{"bipia", []string{"=3"}, "want KEY=VALUE"},
	} {
		f, err := New(tc.name, tc.set)
		switch {
		case tc.want == "" && (err != nil || f == nil):
			t.Errorf("%s %v: %v", tc.name, tc.set, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: error %v, want %q", tc.name, tc.set, err, tc.want)
		}
	}
	for _, info := range Registry.Infos() {
		if info.Description == "" {
			t.Errorf("%s has no description", info.Name)
		}
	}
}

// hostile is text a hostile benchmark file could carry: bidi overrides
// and isolates, invisible characters, terminal controls, separators.
const hostile = "pay \u202eevil.example\u202c \u2066x\u2069 zero\u200bwidth \ufeff \x1b[31mred\x1b[0m \u009b2J \u2028 \U000E0041 end"

// TestWriteEscapesHostileText (issue 24): every text field a benchmark
// gives is written with each control, bidi and invisible character
// escaped, and the file loads back, through the parser users' files go
// through, to the same values.
func TestWriteEscapesHostileText(t *testing.T) {
	d := &Dataset{
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
		Cases: []Case{{ID: "h1", Description: hostile, Reference: hostile, Config: map[string]any{
			"agents": []string{"desk"}, "attacks": []string{"naive"}, "task": hostile, "canary": hostile,
			"sink_args": map[string]any{"to": hostile}, "labels": map[string]any{"kind": hostile},
		}}},
	}
	var b strings.Builder
	if err := Write(&b, d); err != nil {
		t.Fatal(err)
	}
	for i, r := range b.String() {
		if r != '\n' && termsafe.Unsafe(r) {
			t.Fatalf("byte %d: %U written raw", i, r)
		}
	}
	ds, err := dataset.Parse("hostile.toml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
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
