package cli

import (
	"strings"
	"testing"
)

// TestProxyChecksBeforeListening: whatever stops a run (the trust check, a
// missing key, an --output that exists) stops it before the proxy prints a
// URL or listens: an agent or harness reading that URL must find a proxy.
func TestProxyChecksBeforeListening(t *testing.T) {
	dir := t.TempDir()
	network := strings.Replace(proxyExperiment, `spec = "mock:obedient"`, `spec = "openai:gpt-4o-mini"`, 1)
	fileURL := strings.Replace(network, `spec = "openai:gpt-4o-mini"`, "spec = \"openai:gpt-4o-mini\"\nbase_url = \"http://127.0.0.1:9/v1\"", 1)
	trust := writeFile(t, dir, "trust.toml", fileURL)
	keyless := writeFile(t, dir, "keyless.toml", network)
	offline := writeFile(t, dir, "offline.toml", proxyExperiment)
	exists := writeFile(t, dir, "exists.jsonl", "")
	for _, tc := range []struct {
		name, key string
		args      []string
		want      string
	}{
		{"trust check", "sk-test-0123456789", []string{"--config", trust}, "--trust-config"},
		{"no API key", "", []string{"--config", keyless}, "OPENAI_API_KEY"},
		{"output exists", "", []string{"--config", offline, "-o", exists}, "exists"},
	} {
		for _, cmd := range []string{"serve", "run"} {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				t.Setenv("OPENAI_API_KEY", tc.key)
				args := append([]string{"proxy", cmd, "-q"}, tc.args...)
				if cmd == "run" {
					args = append(args, "--", "true")
				}
				r := run(t, args...)
				if r.code != 2 || !strings.Contains(r.err, tc.want) {
					t.Fatalf("exit %d: %s; want 2 with %q", r.code, r.err, tc.want)
				}
				if strings.Contains(r.err, "proxy: http") {
					t.Errorf("the proxy printed a URL before refusing to run:\n%s", r.err)
				}
			})
		}
	}
}
