package matrix

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

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
