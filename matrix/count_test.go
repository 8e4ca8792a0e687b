package matrix_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pikit-go/pikit/matrix"
)

// TestCountPlanMatchesEnumeration: counting from the axes gives exactly
// what visiting every cell gives.
func TestCountPlanMatchesEnumeration(t *testing.T) {
	cfg, err := matrix.Parse("c.toml", []byte(`
attacks = ["naive", "escape", "combined"]
defenses = ["none", "sandwich"]
channels = ["", "webpage", "email_headers"]
agents = ["chat", "browser", "email"]
repeats = 3
judge_type = "llm"
max_steps = 4
`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := matrix.Expand(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fast := matrix.CountPlan(g)
	slow := matrix.CountPlan(matrix.Filtered(g, func(matrix.Cell) bool { return true }))
	if fmt.Sprint(fast) != fmt.Sprint(slow) {
		t.Errorf("from the axes:\n%+v\ncell by cell:\n%+v", fast, slow)
	}
	if fast.Cells != g.Len() || fast.MaxCalls != g.Len()*5 || fast.NetworkCalls != 0 {
		t.Errorf("cells %d calls %d network %d; want %d, %d, 0", fast.Cells, fast.MaxCalls, fast.NetworkCalls, g.Len(), g.Len()*5)
	}
	twice := matrix.CountPlan(matrix.Concat(g, g))
	if twice.Cells != 2*fast.Cells || twice.Axes[0].Values[0].Cells != 2*fast.Axes[0].Values[0].Cells {
		t.Errorf("a concat of two grids counts %+v", twice)
	}
}

// TestGiantPlanCountsAtOnce: a billion repeats are counted from the axes in
// no time, and a plan too large to count is refused, not overflowed.
func TestGiantPlanCountsAtOnce(t *testing.T) {
	cfg, err := matrix.Parse("g.toml", []byte("attacks = [\"*\"]\ndefenses = [\"*\"]\nrepeats = 1000000000\ntarget_spec = \"openai:m\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	g, err := matrix.Expand(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := matrix.CountPlan(g)
	if d := time.Since(start); d > time.Second {
		t.Errorf("counting took %v", d)
	}
	if c.Cells != g.Len() || c.Cells < 100_000_000_000 || c.NetworkCalls != c.MaxCalls {
		t.Errorf("count %+v", c)
	}
	cfg, err = matrix.Parse("huge.toml", []byte("attacks = [\"*\"]\ndefenses = [\"*\"]\nchannels = [\"*\"]\nagents = [\"*\"]\nrepeats = 9000000000000000000\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = matrix.Expand(cfg)
	if err == nil || !strings.Contains(err.Error(), "huge.toml:5: repeats: the plan has more than") {
		t.Errorf("overflowing plan: %v", err)
	}
}

// TestConfigLine: the line of a [target] option and of a flat
// target_options entry.
func TestConfigLine(t *testing.T) {
	// max_tokens is an option, not a secret (its name says "tokens"):
	// whether the provider takes it is checked when the target opens.
	cfg, err := matrix.Parse("t.toml", []byte("attacks = [\"naive\"]\n\n[target]\nspec = \"mock\"\nmax_tokens = 5\n"))
	if err != nil || cfg.Line("target_options.max_tokens") != 5 {
		t.Fatalf("max_tokens: %v, line %d", err, cfg.Line("target_options.max_tokens"))
	}
	cfg, err = matrix.Parse("t.toml", []byte("attacks = [\"naive\"]\n\n[target]\nspec = \"openai:m\"\nbase_url = \"http://x.test/v1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Line("target_options.base_url"); got != 5 {
		t.Errorf("[target] base_url on line %d, want 5", got)
	}
	cfg, err = matrix.Parse("t.toml", []byte("target_spec = \"openai:m\"\ntarget_options = { base_url = \"http://x.test/v1\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Line("target_options.base_url"); got != 2 {
		t.Errorf("target_options.base_url on line %d, want 2", got)
	}
}
