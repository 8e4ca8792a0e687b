package matrix

import (
	"testing"
)

func mustParse(t *testing.T, doc string) Config {
	t.Helper()
	c, err := Parse("test.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPlanCounts(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want int
	}{
		{"defaults", ``, 1},
		{"cross", `attacks = ["naive", "escape", "combined"]
defenses = ["none", "sandwich"]
repeats = 4`, 3 * 2 * 4},
		{"chat skips channels", `agents = ["chat", "browser"]
channels = ["", "webpage", "markdown"]`, 1 + 3 - 1}, // browser: "" resolves to webpage, same as the explicit one
		{"tool agent default channel", `agents = ["email"]`, 1},
		{"specs make variants", `attacks = ["format_confusion"]
attack_specs = [{ name = "format_confusion", kwargs = { template = "tool" } },
                { name = "format_confusion", kwargs = { template = "json" } }]`, 2},
		{"specs alone replace the default", `attack_specs = [{ name = "escape" }, { name = "combined" }]`, 2},
		{"specs add to names", `attacks = ["naive"]
attack_specs = [{ name = "escape", kwargs = { escape = "\n" } }]`, 2},
		{"wildcard attacks", `attacks = ["*"]`, 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells, err := Plan(mustParse(t, tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if len(cells) != tt.want {
				t.Errorf("got %d cells, want %d", len(cells), tt.want)
			}
			seen := map[string]bool{}
			for i, c := range cells {
				if c.Index != i {
					t.Errorf("cell %d has index %d", i, c.Index)
				}
				if seen[c.Key] {
					t.Errorf("duplicate key %s", c.Key)
				}
				seen[c.Key] = true
			}
		})
	}
}

func TestPlanOnlyChatWithChannelsIsAnError(t *testing.T) {
	if _, err := Plan(mustParse(t, `channels = ["webpage"]`)); err == nil {
		t.Error("chat with only indirect channels should plan no cells and fail")
	}
}

func TestPlanResolvesDefaultChannel(t *testing.T) {
	cells, err := Plan(mustParse(t, `agents = ["coding"]`))
	if err != nil {
		t.Fatal(err)
	}
	if cells[0].Channel.Name != "skills" || cells[0].Direct() {
		t.Errorf("coding with channel \"\" should use its default channel skills, got %+v", cells[0].Channel)
	}
}

func TestKeysStable(t *testing.T) {
	a := `attacks = ["naive", "escape"]
defenses = ["none", "sandwich"]
task = "Say PWNED."
canary = "PWNED"
repeats = 2
sink_args = { to = "x@example.com", subject = "hi" }`
	// The same config with keys in another order, sectioned.
	b := `[judge]
sink_args = { subject = "hi", to = "x@example.com" }
canary = "PWNED"
[matrix]
repeats = 2
task = "Say PWNED."
defenses = ["none", "sandwich"]
attacks = ["naive", "escape"]`
	keys := func(doc string) []string {
		cells, err := Plan(mustParse(t, doc))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cells {
			out = append(out, c.Key)
		}
		return out
	}
	k1, k2, k3 := keys(a), keys(a), keys(b)
	for i := range k1 {
		if k1[i] != k2[i] || k1[i] != k3[i] {
			t.Fatalf("keys differ across runs or field order: %v %v %v", k1, k2, k3)
		}
	}
	other := keys(`attacks = ["naive", "escape"]
defenses = ["none", "sandwich"]
task = "Say something else."
canary = "PWNED"
repeats = 2`)
	if other[0] == k1[0] {
		t.Error("a different task must give different keys")
	}
	if k1[0] == k1[1] {
		t.Error("repeats must have different keys")
	}
}

func TestPlanSeeds(t *testing.T) {
	cells, err := Plan(mustParse(t, "seed = 100\nrepeats = 3"))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cells {
		if c.Repeat != i || c.Seed != int64(100+i) {
			t.Errorf("cell %d: repeat %d seed %d", i, c.Repeat, c.Seed)
		}
	}
}
