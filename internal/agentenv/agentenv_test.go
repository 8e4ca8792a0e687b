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
		// Request headers, as a HAR file names them.
		{"Authorization", true},
		{"Proxy-Authorization", true},
		{"Cookie", true},
		{"x-api-key", true},
		{"api-key", true},
		{"X-Goog-Api-Key", true},
		{"X-Auth-Token", true},
		{"X-Amz-Security-Token", true},
		{"X-Client-Secret", true},
		{"Openai-Organization", false},
		{"Anthropic-Version", false},
		{"Content-Type", false},
		{"User-Agent", false},
		{"Sec-Fetch-Mode", false},
		{"Keep-Alive", false},
		{"Referer", false},
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

// TestSecretValue: values shaped like credentials are secrets whatever
// their variable or header is called; ordinary values are not.
func TestSecretValue(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		secret      bool
	}{
		{"CI_JOB_JWT", "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJqb2JfMTIzIiwibmFtZXNwYWNlX2lkIjoiNDIifQ.c2lnbmF0dXJlLWJ5dGVz", true},
		{"a JWT after Bearer", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", true},
		{"a DSN with a password", "postgres://app:hunter2@db.internal:5432/orders", true},
		{"a proxy URL with credentials", "http://user:pass@proxy.corp.example:3128", true},
		{"a proxy list with credentials", "http://proxy-a.example:3128,http://bob:s3cret@proxy-b.example:8080", true},
		{"redis with an empty user", "redis://:p4ss@cache:6379/0", true},
		{"an OpenAI key", "sk-proj-Abc123def456ghi789jkl012mno345", true},
		{"an Anthropic key", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345", true},
		{"an AWS access key id", "AKIAIOSFODNN7EXAMPLE", true},
		{"AWS temporary key id", "ASIAY34FZKBOKMUTVV7A", true},
		{"a GitHub token", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", true},
		{"a GitHub fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", true},
		{"a Slack bot token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", true},
		{"a GitLab token", "glpat-xK3f9Qw2ZpL7vB1nR8tY", true},
		{"a Hugging Face token", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", true},
		{"a Google API key", "AIzaSyA-1234567890abcdefghijklmnopqrstu", true},
		{"a Stripe key", "sk_live_51AbCdEfGhIjKlMnOpQrStUv", true},
		{"a private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", true},
		{"a key in a flag", "--api-key=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345", true},
		{"PATH", "/usr/local/bin:/usr/bin:/bin", false},
		{"a URL without user info", "https://api.example.com/v1", false},
		{"a URL with a user and no password", "ssh://git@github.com/org/repo.git", false},
		{"an email address", "sam@example.com", false},
		{"a word ending in sk", "desk-lamp-0123456789abcdefghij", false},
		{"a short sk- value", "sk-1", false},
		{"a path with sk- in it", "/opt/sk-learn-models-cache-directory", false},
		{"a path with hf_ in it", "/data/hf_datasets_cache_directory_for_tests", false},
		{"a version string", "1.2.3-beta.4", false},
		{"dotted words", "eyJust.some.words", false},
		{"a placeholder key", "pikit-proxy", false},
		{"empty", "", false},
		{"LS_COLORS", "rs=0:di=01;34:ln=01;36:*.tar=01;31:*.sk=00;32", false},
	} {
		if got := SecretValue(tc.value); got != tc.secret {
			t.Errorf("%s: SecretValue(%q) = %v, want %v", tc.name, tc.value, got, tc.secret)
		}
	}
}

// TestFilterDropsSecretValues: a variable whose name says nothing but
// whose value is a credential (a CI job's JWT, a DSN or a proxy URL with
// a password) is withheld too, named and never shown; --pass-env still
// passes one.
func TestFilterDropsSecretValues(t *testing.T) {
	environ := []string{
		"PATH=/bin",
		"CI_JOB_JWT=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJqb2IifQ.c2lnbmF0dXJl",
		"PGURL=postgres://u:p@db.internal/app",
		"HTTPS_PROXY=http://user:pass@proxy.example:3128",
		"https_proxy=http://proxy.example:3128",
		"DEPLOY=ghp_16C7e42F292c6912E7710c838347Ae178B4a",
		"EDITOR=vim",
	}
	env, dropped := Filter(environ, []string{"PGURL"}, nil)
	if want := []string{"PATH=/bin", "PGURL=postgres://u:p@db.internal/app", "https_proxy=http://proxy.example:3128", "EDITOR=vim"}; !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	if want := []string{"CI_JOB_JWT", "DEPLOY", "HTTPS_PROXY"}; !slices.Equal(dropped, want) {
		t.Errorf("dropped = %q, want %q", dropped, want)
	}
}
