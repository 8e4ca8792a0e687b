//go:build unix

package proxy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dumpEnv runs the driver once with an agent that writes its environment
// to a file and returns that environment, by name.
func dumpEnv(t *testing.T, pass []string) (map[string]string, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "env")
	d := newDriver(t, "sh", "-c", `env > "$0"`, file)
	d.PassEnv = pass
	// The agent sends no model request: that is the cell's error, and
	// beside the point here.
	if _, err := d.Drive(t.Context(), offlineDrive()); err == nil || !strings.Contains(err.Error(), "sent no model request") {
		t.Fatalf("err %v", err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env, string(raw)
}

// TestDriverAgentEnvironment: the agent never gets pikit's provider keys
// (it gets a placeholder; the proxy adds the real key upstream) nor any
// other secret of the user's environment, unless the user names it; it
// gets the proxy's base URLs and session.
func TestDriverAgentEnvironment(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY":        "sk-real-openai-0123456789",
		"ANTHROPIC_API_KEY":     "sk-ant-real-0123456789",
		"AWS_SECRET_ACCESS_KEY": "aws-real-secret-0123456789",
		"MY_SERVICE_TOKEN":      "svc-real-token-0123456789",
		"OPENAI_BASE_URL":       "https://real.example/v1",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("PIKIT_TEST_PLAIN", "plain-value")
	for _, tc := range []struct {
		name string
		pass []string
		want map[string]string // variables the agent must see, with their values
		gone []string          // variables it must not see at all
	}{
		{name: "secrets withheld", want: map[string]string{"PIKIT_TEST_PLAIN": "plain-value"},
			gone: []string{"AWS_SECRET_ACCESS_KEY", "MY_SERVICE_TOKEN"}},
		{name: "a variable passed by name", pass: []string{"MY_SERVICE_TOKEN"},
			want: map[string]string{"MY_SERVICE_TOKEN": secrets["MY_SERVICE_TOKEN"]},
			gone: []string{"AWS_SECRET_ACCESS_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, raw := dumpEnv(t, tc.pass)
			if env["OPENAI_API_KEY"] != PlaceholderKey || env["ANTHROPIC_API_KEY"] != PlaceholderKey {
				t.Errorf("keys %q, %q; want the placeholder %q", env["OPENAI_API_KEY"], env["ANTHROPIC_API_KEY"], PlaceholderKey)
			}
			id := env[EnvSession]
			if id == "" || !strings.HasSuffix(env["OPENAI_BASE_URL"], "/s/"+id+"/v1") || !strings.HasSuffix(env["ANTHROPIC_BASE_URL"], "/s/"+id) || env[EnvProxy] == "" {
				t.Errorf("the proxy's variables: %q %q %q %q", env[EnvSession], env["OPENAI_BASE_URL"], env["ANTHROPIC_BASE_URL"], env[EnvProxy])
			}
			if env["PATH"] == "" {
				t.Error("PATH did not reach the agent")
			}
			for k, v := range tc.want {
				if env[k] != v {
					t.Errorf("%s=%q, want %q", k, env[k], v)
				}
			}
			for _, k := range tc.gone {
				if _, ok := env[k]; ok {
					t.Errorf("%s reached the agent", k)
				}
			}
			for k, v := range secrets {
				if strings.Contains(raw, v) && !slices.Contains(tc.pass, k) {
					t.Errorf("the value of %s reached the agent", k)
				}
			}
		})
	}
}

// TestDriverWithheld: the names (never the values) of what the agent does
// not get, for the notice pikit proxy run gives once.
func TestDriverWithheld(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-real")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-real")
	t.Setenv("MY_SERVICE_TOKEN", "svc")
	t.Setenv("OPENAI_BASE_URL", "https://real.example/v1")
	d := &Driver{PassEnv: []string{"MY_SERVICE_TOKEN"}}
	got := d.Withheld()
	for _, name := range []string{"AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY"} {
		if !slices.Contains(got, name) {
			t.Errorf("%s is not listed as withheld: %q", name, got)
		}
	}
	for _, name := range []string{"MY_SERVICE_TOKEN", "OPENAI_BASE_URL", "PATH"} {
		if slices.Contains(got, name) {
			t.Errorf("%s is listed as withheld: %q", name, got)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("not sorted: %q", got)
	}
}
