package target

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadDotEnv(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".env")
	content := "# keys for pikit\nOPENAI_API_KEY=sk-from-file-0123456789abcdef\nexport ANTHROPIC_API_KEY=\"sk-ant-from-file-0123456789\"\nPIKIT_DOTENV_TEST_EMPTY=from-file\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(OpenAIKeyEnv, "sk-from-env-0123456789abcdef") // the environment wins
	t.Setenv(AnthropicKeyEnv, "")                          // empty counts as unset
	t.Setenv("PIKIT_DOTENV_TEST_EMPTY", "")
	if err := LoadDotEnv(path); err != nil {
		t.Fatalf("LoadDotEnv: %v", err)
	}
	for name, want := range map[string]string{
		OpenAIKeyEnv:              "sk-from-env-0123456789abcdef",
		AnthropicKeyEnv:           "sk-ant-from-file-0123456789",
		"PIKIT_DOTENV_TEST_EMPTY": "from-file",
	} {
		if got := os.Getenv(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	// The loaded key is what Open uses.
	tg, err := Open("anthropic:claude-test", nil)
	if err != nil {
		t.Fatalf("Open after LoadDotEnv: %v", err)
	}
	if got := tg.(*anthropicTarget).secrets; len(got) != 1 || got[0] != "sk-ant-from-file-0123456789" {
		t.Errorf("key = %v", got)
	}
}

func TestLoadDotEnvDefaultPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DotEnvFile), []byte("OLLAMA_BASE_URL=http://gpu-box:11434/v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv(OllamaBaseURLEnv, "")
	if err := LoadDotEnv(""); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv(OllamaBaseURLEnv); got != "http://gpu-box:11434/v1" {
		t.Errorf("%s = %q", OllamaBaseURLEnv, got)
	}
}

func TestLoadDotEnvMissingFile(t *testing.T) {
	if err := LoadDotEnv(filepath.Join(t.TempDir(), "nope.env")); err != nil {
		t.Errorf("LoadDotEnv of a missing file = %v, want nil", err)
	}
}

func TestLoadDotEnvErrorsHideSecrets(t *testing.T) {
	const secret = "sk-in-a-broken-file-0123456789"
	tests := map[string]string{
		"unterminated":    "OPENAI_API_KEY=\"" + secret + "\n",
		"bad name before": "B@D=1\nOPENAI_API_KEY=" + secret + "\n",
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".env")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv(OpenAIKeyEnv, "")
			err := LoadDotEnv(path)
			if err == nil {
				t.Fatalf("LoadDotEnv accepted %q", content)
			}
			t.Logf("error: %v", err)
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "sk-in-a") {
				t.Errorf("error quotes the file: %v", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestLoadDotEnvUnreadable(t *testing.T) {
	dir := t.TempDir() // a directory is not a readable .env file
	err := LoadDotEnv(dir)
	if err == nil {
		t.Fatal("LoadDotEnv of a directory succeeded")
	}
	if errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v looks like a missing file", err)
	}
}
