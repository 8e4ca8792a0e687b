package importer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
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
