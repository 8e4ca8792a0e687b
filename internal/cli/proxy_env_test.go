//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProxyRunAgentEnvironment: each run of the agent gets placeholder
// provider keys and none of the user's other secrets unless --pass-env
// names them; stderr names what was withheld (never a value) once per
// run, not once per cell.
func TestProxyRunAgentEnvironment(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY":        "sk-real-openai-0123456789",
		"ANTHROPIC_API_KEY":     "sk-ant-real-0123456789",
		"AWS_SECRET_ACCESS_KEY": "aws-real-secret-0123456789",
		"MY_SERVICE_TOKEN":      "svc-real-token-0123456789",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", strings.Replace(proxyExperiment, `["none", "naive", "important_instructions", "context_ignoring"]`, `["naive"]`, 1))
	for _, tc := range []struct {
		name string
		pass []string
	}{
		{"default", nil},
		{"passed by name", []string{"--pass-env", "MY_SERVICE_TOKEN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			envs := t.TempDir()
			out := filepath.Join(t.TempDir(), "r.jsonl")
			// The agent writes its environment, then runs the helper agent.
			args := append([]string{"proxy", "run", "--config", cfg, "-q", "-o", out}, tc.pass...)
			args = append(args, "--", "sh", "-c", `env > "$0/$PIKIT_SESSION"; exec "$@"`, envs)
			args = append(args, helperAgent(t)[1:]...)
			r := run(t, args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.err)
			}
			files, _ := os.ReadDir(envs)
			if len(files) != 3 {
				t.Fatalf("%d agent runs, want 3", len(files))
			}
			for _, f := range files {
				raw := mustRead(t, filepath.Join(envs, f.Name()))
				for k, v := range secrets {
					passed := len(tc.pass) > 0 && k == tc.pass[1]
					if strings.Contains(raw, v) != passed {
						t.Errorf("%s reached the agent: %v, want %v", k, !passed, passed)
					}
				}
				for _, want := range []string{"\nOPENAI_API_KEY=pikit-proxy\n", "\nANTHROPIC_API_KEY=pikit-proxy\n", "\nPIKIT_SESSION=" + f.Name() + "\n"} {
					if !strings.Contains("\n"+raw, want) {
						t.Errorf("the agent's environment lacks %q", strings.TrimSpace(want))
					}
				}
			}
			if n := strings.Count(r.err, "agent environment:"); n != 1 {
				t.Errorf("the notice came %d times, want once:\n%s", n, r.err)
			}
			for k, v := range secrets {
				if strings.Contains(r.err, v) {
					t.Errorf("stderr shows the value of %s", k)
				}
			}
			notice := r.err[strings.Index(r.err, "agent environment:"):]
			notice = notice[:strings.IndexByte(notice, '\n')]
			if !strings.Contains(notice, "AWS_SECRET_ACCESS_KEY") || !strings.Contains(notice, "--pass-env") {
				t.Errorf("the notice does not name the withheld variables and how to pass one: %s", notice)
			}
			if passed := len(tc.pass) > 0; strings.Contains(notice, "MY_SERVICE_TOKEN") == passed {
				t.Errorf("the notice: %s", notice)
			}
		})
	}
}

func TestProxyPassEnvUsage(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", proxyExperiment)
	for _, tc := range []struct {
		name, value, want string
	}{
		{"a provider key", "OPENAI_API_KEY", "placeholder"},
		{"the other provider key", "ANTHROPIC_API_KEY", "placeholder"},
		{"a variable the proxy sets", "OPENAI_BASE_URL", "the proxy sets"},
		{"not a name", "MY-TOKEN", "not a variable name"},
		{"empty", "", "not a variable name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "proxy", "run", "--config", cfg, "--pass-env", tc.value, "--", "true")
			if r.code != 2 || !strings.Contains(r.err, "--pass-env") || !strings.Contains(r.err, tc.want) {
				t.Errorf("exit %d: %s; want 2 with %q", r.code, r.err, tc.want)
			}
		})
	}
}
