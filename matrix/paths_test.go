package matrix

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A path a config names is judged where it really leads: a symbolic link
// out of the config's directory is outside, whatever its name says.
func TestConfigPathsFollowLinks(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("AWS_SECRET_ACCESS_KEY=do-not-leak\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mustLink := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	os.WriteFile(filepath.Join(dir, "mine.eml"), []byte("Subject: hello\n\nhi\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	mustLink(secret, "notes.md")                     // a file link out
	mustLink(outside, "keys")                        // a directory link out
	mustLink("mine.eml", "local-link.eml")           // a link that stays
	mustLink(filepath.Join(outside, "nope"), "gone") // a dangling link out
	cfgPath := filepath.Join(dir, "exp.toml")
	for _, tc := range []struct {
		name, doc string
		outside   []string
		err       string
	}{
		{"plain file", `carrier_path = "mine.eml"`, nil, ""},
		{"link inside", `carrier_path = "local-link.eml"`, nil, ""},
		{"file link out", `carrier_path = "notes.md"`, []string{"carrier_path"}, ""},
		{"through a directory link", `carrier_path = "keys/secret.txt"`, []string{"carrier_path"}, ""},
		{"output through a directory link", `output_path = "keys/authorized_keys"`, []string{"output_path"}, ""},
		{"output inside", `output_path = "sub/tainted.eml"`, nil, ""},
		{"output over a dangling link", `output_path = "gone"`, nil, "exists"},
		{"lexically out", `carrier_path = "../` + filepath.Base(outside) + `/secret.txt"`, []string{"carrier_path"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(cfgPath, []byte("agents = [\"email\"]\nchannels = [\"email_headers\"]\n"+tc.doc+"\n"))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.OutsidePaths(); !slices.Equal(got, tc.outside) {
				t.Errorf("OutsidePaths() = %q, want %q", got, tc.outside)
			}
		})
	}
}

// An output inside the directory is written through os.Root: a link put
// in its place after the config was read does not lead the write out.
func TestOutputPathWriteStaysInside(t *testing.T) {
	outside, dir := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	cfg, err := Parse(filepath.Join(dir, "exp.toml"), []byte("agents = [\"email\"]\nchannels = [\"email_headers\"]\noutput_path = \"out/x.eml\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Swap the directory for a link out.
	if err := os.Remove(filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	cells, err := Plan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Runner{Concurrency: 1}.RunAll(context.Background(), cells)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "x.eml")); err == nil {
		t.Fatal("the write followed the link out of the config's directory")
	}
	if len(res) != 1 || res[0].Error == "" || !strings.Contains(res[0].Error, "output_path") {
		t.Errorf("want a runtime error naming output_path, got %+v", res)
	}
}

// Options that hold credentials are refused in a file, matched by the
// whole name (issue 21): counts that merely say "tokens", or start with
// "token", are not.
func TestSecretOption(t *testing.T) {
	for name, secret := range map[string]bool{
		"api_key": true, "openai_api_key": true, "apiKey": true, "key": true, "access_token": true, "token": true,
		"auth_token": true, "secret": true, "client_secret": true, "password": true, "auth": true, "x-api-key": true,
		"Authorization": true, "openai_key": true, "bearer_token": true, "API.KEY": true,
		"max_tokens": false, "max_output_tokens": false, "token_budget": false, "max_completion_tokens": false,
		"tokens": false, "base_url": false, "anthropic_version": false, "keyboard": false, "max_response_bytes": false,
	} {
		if got := secretOption(name); got != secret {
			t.Errorf("secretOption(%q) = %v, want %v", name, got, secret)
		}
	}
	if _, err := Parse("t.toml", []byte("[target]\nspec = \"openai:m\"\nmax_tokens = 64\n")); err != nil {
		t.Errorf("max_tokens in [target]: %v", err)
	}
	cfg, err := Parse("t.toml", []byte("target_spec = \"openai:m\"\ntarget_options = { max_tokens = 128, max_output_tokens = 64, token_budget = 9 }\n"))
	if err != nil || cfg.TargetOpts["max_tokens"] != int64(128) || len(cfg.TargetOpts) != 3 {
		t.Errorf("target_options counts: %v %v", err, cfg.TargetOpts)
	}
	if _, err := Parse("t.toml", []byte("target_spec = \"openai:m\"\ntarget_options = { auth_token = \"sk-x\" }\n")); err == nil {
		t.Error("auth_token in target_options was not refused")
	}
}
