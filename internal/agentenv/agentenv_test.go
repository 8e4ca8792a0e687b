package agentenv

import (
	"slices"
	"testing"
)

func TestSecret(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret bool
	}{
		{"OPENAI_API_KEY", true},
		{"ANTHROPIC_API_KEY", true},
		{"OPENAI_BASE_URL", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"AWS_SESSION_TOKEN", true},
		{"AWS_PROFILE", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"GITHUB_TOKEN", true},
		{"MY_SERVICE_APIKEY", true},
		{"DB_PASSWORD", true},
		{"SSH_AUTH_SOCK", true},
		{"HF_TOKEN", true},
		{"X_AUTH", true},
		{"PRIVATE_KEY_PATH", true},
		{"PATH", false},
		{"HOME", false},
		{"PWD", false},
		{"LANG", false},
		{"TERM", false},
		{"PYTHONPATH", false},
		{"VIRTUAL_ENV", false},
		{"GOPATH", false},
		{"PIKIT_SESSION", false},
		{"KEYBOARD_LAYOUT", false},
		{"AWS_CA_BUNDLE", false},
		{"CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE", false},
	} {
		if got := Secret(tc.name); got != tc.secret {
			t.Errorf("Secret(%q) = %v, want %v", tc.name, got, tc.secret)
		}
	}
}

func TestFilter(t *testing.T) {
	environ := []string{"PATH=/bin", "OPENAI_API_KEY=sk-real", "AWS_SECRET_ACCESS_KEY=abc", "HOME=/root", "MY_TOKEN=t", "=odd"}
	env, dropped := Filter(environ, []string{"MY_TOKEN"}, []string{"OPENAI_API_KEY=pikit-proxy"})
	want := []string{"PATH=/bin", "HOME=/root", "MY_TOKEN=t", "=odd", "OPENAI_API_KEY=pikit-proxy"}
	if !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	if !slices.Equal(dropped, []string{"AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY"}) {
		t.Errorf("dropped = %q", dropped)
	}
	for _, kv := range env {
		if kv == "OPENAI_API_KEY=sk-real" || kv == "AWS_SECRET_ACCESS_KEY=abc" {
			t.Errorf("a secret passed: %s", kv)
		}
	}
}

func TestValidName(t *testing.T) {
	for s, ok := range map[string]bool{"OPENAI_API_KEY": true, "_X": true, "a1": true, "": false, "1A": false, "A=B": false, "A B": false} {
		if ValidName(s) != ok {
			t.Errorf("ValidName(%q) = %v", s, !ok)
		}
	}
}
