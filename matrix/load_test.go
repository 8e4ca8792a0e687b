package matrix

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseNonFinite: a file may not give NaN or an infinity to any
// number a config takes (temperature, a provider's top_p, a method's
// threshold, a sink argument, a section's option): each is refused at
// load, naming its line and key, instead of failing every cell later.
func TestParseNonFinite(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"temperature nan", "temperature = nan\n", []string{"bad.toml:1:", "temperature", "want a finite number, got nan"}},
		{"temperature inf", "task = \"x\"\ntemperature = inf\n", []string{"bad.toml:2:", "temperature", "got inf"}},
		{"an integer key", "max_steps = -inf\n", []string{"bad.toml:1:", "max_steps", "got -inf"}},
		{"an integer past int64", "max_steps = 1e300\n", []string{"bad.toml:1:", "max_steps", "want an integer"}},
		{"top_p in target_options", "target_options = { top_p = nan }\n", []string{"bad.toml:1:", "target_options.top_p", "got nan"}},
		{"top_p in [target]", "[target]\nspec = \"mock\"\ntop_p = +inf\n", []string{"bad.toml:3:", "target.top_p", "got inf"}},
		{"a method's option", "defense_specs = [{ name = \"sandwich\", kwargs = { threshold = nan } }]\n", []string{"bad.toml:1:", "defense_specs[0].kwargs.threshold"}},
		{"a sink argument", "task = \"x\"\n[judge]\nsink_args = { amount = -inf }\n", []string{"bad.toml:3:", "judge.sink_args.amount"}},
		{"a list element", "labels = { a = \"b\" }\n[proxy]\nweights = [0.5, nan]\n", []string{"bad.toml:3:", "proxy.weights[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad.toml", []byte(tt.doc))
			if err == nil {
				t.Fatalf("no error for %q", tt.doc)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error does not wrap ErrConfig: %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestValidateNonFinite: a config built in code with a NaN temperature
// is refused too (every comparison with NaN is false).
func TestValidateNonFinite(t *testing.T) {
	c := NewConfig()
	c.Temperature = math.NaN()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "temperature") {
		t.Errorf("temperature NaN: %v", err)
	}
}

// TestCarrierHardLink (issue 36, item 8): a carrier beside the config
// that is a hard link (ln /outside/secret notes.md) names a file that may
// live anywhere: its path stays inside, so it is told by its link count.
// carrier_path and data_file both need --trust-config for it, and the
// refusal says why; a carrier with one name does not.
func TestCarrierHardLink(t *testing.T) {
	outside, dir := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("AWS_SECRET_ACCESS_KEY=leaked-through-a-hard-link\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(dir, "notes.md")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.md"), []byte("my own notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "exp.toml")
	for _, tc := range []struct {
		name, doc string
		outside   []string
	}{
		{"carrier_path", `carrier_path = "notes.md"`, []string{"carrier_path"}},
		{"data_file", `data_file = "notes.md"`, []string{"carrier_path"}},
		{"one name", `carrier_path = "mine.md"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(cfgPath, []byte("agents = [\"email\"]\nchannels = [\"email_headers\"]\n"+tc.doc+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.OutsidePaths(); !slices.Equal(got, tc.outside) {
				t.Fatalf("OutsidePaths() = %q, want %q", got, tc.outside)
			}
			if tc.outside == nil {
				return
			}
			if why := cfg.OutsideReason("carrier_path"); !strings.Contains(why, "notes.md has 2 names (a hard link)") {
				t.Errorf("OutsideReason = %q", why)
			}
			if cfg.Line("carrier_path") != 3 {
				t.Errorf("line %d, want 3", cfg.Line("carrier_path"))
			}
		})
	}
}
