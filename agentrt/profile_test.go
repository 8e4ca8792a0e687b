package agentrt

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestInitProfiles(t *testing.T) {
	dir := t.TempDir()
	p, err := Init("hermes", filepath.Join(dir, "h"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.yaml", "plugins/pikit_fixture/plugin.yaml", "plugins/pikit_fixture/__init__.py", "plugins/pikit_fixture/tools.py"} {
		if _, err := os.Stat(filepath.Join(p.Dir, f)); err != nil {
			t.Errorf("hermes profile lacks %s: %v", f, err)
		}
	}
	if b, _ := os.ReadFile(p.Config); !strings.Contains(string(b), "- pikit_fixture") {
		t.Errorf("config.yaml does not enable the plugin: %q", b)
	}
	// The plugin's manifest names every fixture tool.
	if b, _ := os.ReadFile(filepath.Join(p.Fixture, "plugin.yaml")); true {
		for _, tool := range FixtureTools() {
			if !strings.Contains(string(b), "- "+tool) {
				t.Errorf("plugin.yaml lacks %s", tool)
			}
		}
	}

	p, err = Init("openclaw", filepath.Join(dir, "o"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Tools struct {
			Profile   string
			AlsoAllow []string
			Deny      []string
		}
	}
	b, _ := os.ReadFile(p.Config)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Tools.Profile != "minimal" || !reflect.DeepEqual(cfg.Tools.AlsoAllow, FixtureTools()) || !reflect.DeepEqual(cfg.Tools.Deny, []string{"exec", "browser", "message", "write", "edit"}) {
		t.Errorf("openclaw.json %s", b)
	}
	var manifest struct {
		ID        string
		Contracts struct{ Tools []string }
	}
	b, _ = os.ReadFile(filepath.Join(p.Fixture, "openclaw.plugin.json"))
	if err := json.Unmarshal(b, &manifest); err != nil || manifest.ID != OpenClawPluginID || !reflect.DeepEqual(manifest.Contracts.Tools, FixtureTools()) {
		t.Errorf("openclaw.plugin.json %s (%v)", b, err)
	}
	if _, err := os.Stat(filepath.Join(p.Fixture, "src", "index.ts")); err != nil {
		t.Error(err)
	}

	// What is there is kept.
	if err := os.WriteFile(p.Config, []byte("{\"mine\": true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Init("openclaw", p.Dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p.Config); string(b) != "{\"mine\": true}\n" {
		t.Errorf("init replaced an existing configuration: %q", b)
	}
	if _, err := Init("command", filepath.Join(dir, "c")); err == nil || !strings.Contains(err.Error(), "has no fixture plugin") {
		t.Errorf("error %v", err)
	}
}

func TestInstallSteps(t *testing.T) {
	if s := InstallSteps("hermes", "/p", ""); s != nil {
		t.Errorf("hermes needs no build: %v", s)
	}
	s := InstallSteps("openclaw", "/p", "/opt/oc")
	var lines []string
	for _, st := range s {
		lines = append(lines, st.Dir+"$ "+strings.Join(st.Argv, " "))
	}
	want := []string{
		"/p/pikit-openclaw-fixture$ npm ci --ignore-scripts --workspaces=false --no-audit --no-fund",
		"/p/pikit-openclaw-fixture$ /p/pikit-openclaw-fixture/node_modules/.bin/tsc -p tsconfig.json",
		"/p/pikit-openclaw-fixture$ /p/pikit-openclaw-fixture/node_modules/.bin/openclaw plugins build --entry ./dist/index.js",
		"$ /opt/oc plugins install /p/pikit-openclaw-fixture --link --force --accept-capabilities",
		"$ /opt/oc plugins enable pikit-fixture",
		"$ /opt/oc plugins registry --refresh",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("steps\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if !reflect.DeepEqual(s[3].Env, []string{"OPENCLAW_STATE_DIR=/p", "OPENCLAW_CONFIG_PATH=/p/openclaw.json"}) {
		t.Errorf("env %v", s[3].Env)
	}
}

// A fake openclaw answers plugins inspect as OpenClaw does, with the
// plugin loaded and its tools shown: the profile is ready.
func TestCheckProfile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init("openclaw", dir); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "openclaw")
	tools := `[{"names":["pikit_read_document","pikit_fetch_url","pikit_read_email"]},{"names":["pikit_search_knowledge","pikit_load_skill","pikit_record_sink"]}]`
	script := "#!/bin/sh\n[ \"$1 $2 $3\" = \"plugins inspect pikit-fixture\" ] && [ -n \"$OPENCLAW_STATE_DIR\" ] || exit 3\necho '{\"plugin\":{\"id\":\"pikit-fixture\",\"status\":\"loaded\"},\"tools\":" + tools + "}'\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := CheckProfile(context.Background(), "openclaw", dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Ready || !*r.FixtureLoaded || len(r.FixtureToolsVisible) != 6 || r.RuntimeProbeError != "" {
		t.Errorf("report %+v", r)
	}
	// Not on PATH, no profile: not ready, and no probe.
	r, _ = CheckProfile(context.Background(), "hermes", "", "pikit-no-such-hermes")
	if r.Ready || r.ExecutableFound || r.ConfigPresent || *r.FixturePluginPresent {
		t.Errorf("report %+v", r)
	}
}
