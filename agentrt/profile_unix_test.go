//go:build unix

package agentrt

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/agentrt/agenttest"
)

// Fake secrets in pikit's environment while a profile is installed.
const (
	fakeOpenAIKey = "sk-pikit-profile-test-5f4e3d2c1b0a9f8e7d6c"
	fakeAWSSecret = "aws-pikit-profile-test-secret-0a1b2c3d4e5f"
)

// fakeTools puts npm on PATH and returns the openclaw program and the
// log both write.
func fakeTools(t *testing.T) (openclaw, log string) {
	t.Helper()
	bin := t.TempDir()
	openclaw, err := agenttest.WriteInstallTools(bin)
	if err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(bin, "calls.log")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(agenttest.EnvInstallLog, log)
	t.Setenv("OPENAI_API_KEY", fakeOpenAIKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", fakeAWSSecret)
	return openclaw, log
}

// holdingSecret lists the files under the roots that hold a fake secret.
func holdingSecret(t *testing.T, roots ...string) []string {
	t.Helper()
	var found []string
	for _, root := range roots {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			b, _ := os.ReadFile(path)
			if bytes.Contains(b, []byte(fakeOpenAIKey)) || bytes.Contains(b, []byte(fakeAWSSecret)) {
				found = append(found, path)
			}
			return nil
		})
	}
	return found
}

// TestInstallFixturePlantedProfile: someone else's profile holds a
// pikit-openclaw-fixture whose package.json has a preinstall script that
// writes the environment to a file, and an .npmrc. Installing the
// fixture there writes pikit's own plugin, runs no script of theirs, and
// gives no program it starts a secret of pikit's environment.
func TestInstallFixturePlantedProfile(t *testing.T) {
	openclaw, log := fakeTools(t)
	profile := filepath.Join(t.TempDir(), "their-profile")
	fixture := filepath.Join(profile, openclawPlugin)
	if err := os.MkdirAll(fixture, 0o755); err != nil {
		t.Fatal(err)
	}
	planted := `{"name": "pikit-openclaw-fixture", "scripts": {"preinstall": "env > ../leaked-env; touch ../planted-ran", "plugin:build": "touch ../planted-ran"}}`
	if err := os.WriteFile(filepath.Join(fixture, "package.json"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err := InstallFixture(context.Background(), "openclaw", profile, InstallOptions{Executable: openclaw, Out: &out})
	if leaks := holdingSecret(t, filepath.Dir(profile), filepath.Dir(log)); len(leaks) > 0 {
		t.Fatalf("a secret was written to %s", strings.Join(leaks, ", "))
	}
	if _, serr := os.Stat(filepath.Join(profile, "planted-ran")); serr == nil {
		t.Fatal("the profile's planted script ran")
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	checkPluginFiles(t, "openclaw", fixture)
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// Each program logged its environment: PATH is there, no secret.
	if !strings.Contains(string(calls), agenttest.EnvInstallLog+"=") {
		t.Fatalf("the programs did not log their environment:\n%s", calls)
	}
	var order []string
	for _, line := range strings.Split(string(calls), "\n") {
		for _, prog := range []string{"npm ", "tsc ", "local openclaw ", "openclaw "} {
			if strings.HasPrefix(line, prog) {
				order = append(order, line)
				break
			}
		}
	}
	want := []string{
		"npm ci --ignore-scripts --workspaces=false --no-audit --no-fund (in " + fixture + ")",
		"tsc -p tsconfig.json",
		"local openclaw plugins build --entry ./dist/index.js",
		"openclaw plugins install " + fixture + " --link --force --accept-capabilities",
		"openclaw plugins enable pikit-fixture",
		"openclaw plugins registry --refresh",
	}
	if strings.Join(order, "\n") != strings.Join(want, "\n") {
		t.Errorf("the programs run:\n%s\nwant:\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
}

// checkPluginFiles fails unless every file of the runtime's fixture
// plugin is in dir as pikit has it.
func checkPluginFiles(t *testing.T, runtime, dir string) {
	t.Helper()
	src, err := fs.Sub(plugins, pluginLayouts[runtime].src)
	if err != nil {
		t.Fatal(err)
	}
	fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		want, _ := fs.ReadFile(src, p)
		fi, lerr := os.Lstat(filepath.Join(dir, p))
		got, _ := os.ReadFile(filepath.Join(dir, p))
		if lerr != nil || !fi.Mode().IsRegular() || !bytes.Equal(got, want) {
			t.Errorf("%s is not pikit's file (%v)", p, lerr)
		}
		return nil
	})
}

// TestInitPlantedProfile: what someone else's profile may hold in
// pikit's places. Links in pikit's place, and files pikit's plugin does
// not have, are refused (nothing written through them); pikit's own
// files are written fresh in place of what is under their names, and
// what a build made (dist, node_modules, __pycache__) is removed. A
// victim file and directory outside the profile are never touched.
func TestInitPlantedProfile(t *testing.T) {
	oc, hermes := openclawPlugin, hermesPlugin
	tests := []struct {
		name    string
		runtime string
		plant   func(t *testing.T, profile, victim, victimDir string)
		refused string // the path named by the *ProfileError, in the profile; "" when written
	}{
		{"the plugin folder, a symlink out", "openclaw", func(t *testing.T, p, _, vd string) { link(t, vd, p, oc) }, oc},
		{"the plugin's src, a symlink out", "openclaw", func(t *testing.T, p, _, vd string) { mkdir(t, p, oc); link(t, vd, p, oc+"/src") }, oc + "/src"},
		{"package.json, a symlink to a victim", "openclaw", func(t *testing.T, p, v, _ string) { mkdir(t, p, oc); link(t, v, p, oc+"/package.json") }, oc + "/package.json"},
		{"an .npmrc beside pikit's files", "openclaw", func(t *testing.T, p, _, _ string) {
			write(t, p, oc+"/.npmrc", "node-options=--require /tmp/evil.js\n")
		}, oc + "/.npmrc"},
		{"openclaw.json, a symlink to a victim", "openclaw", func(t *testing.T, p, v, _ string) { link(t, v, p, "openclaw.json") }, "openclaw.json"},
		{"openclaw.json, a hard link to a victim", "openclaw", func(t *testing.T, p, v, _ string) {
			if err := os.Link(v, filepath.Join(p, "openclaw.json")); err != nil {
				t.Fatal(err)
			}
		}, "openclaw.json"},
		{"dist, a symlink out", "openclaw", func(t *testing.T, p, _, vd string) { mkdir(t, p, oc); link(t, vd, p, oc+"/dist") }, ""},
		{"dist/index.js, a symlink to a victim", "openclaw", func(t *testing.T, p, v, _ string) { mkdir(t, p, oc+"/dist"); link(t, v, p, oc+"/dist/index.js") }, ""},
		{"node_modules with a planted .bin", "openclaw", func(t *testing.T, p, _, _ string) {
			write(t, p, oc+"/node_modules/.bin/tsc", "#!/bin/sh\ntouch ../planted-ran\n")
		}, ""},
		{"package.json, a hard link to a victim", "openclaw", func(t *testing.T, p, v, _ string) {
			mkdir(t, p, oc)
			if err := os.Link(v, filepath.Join(p, oc, "package.json")); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"a planted package.json", "openclaw", func(t *testing.T, p, _, _ string) {
			write(t, p, oc+"/package.json", `{"scripts": {"preinstall": "env > ../leaked-env"}}`)
		}, ""},
		{"a profile pikit built before", "openclaw", func(t *testing.T, p, _, _ string) {
			write(t, p, oc+"/package-lock.json", `{"lockfileVersion": 3}`)
			write(t, p, oc+"/dist/index.js", "export {};\n")
			write(t, p, oc+"/node_modules/typebox/package.json", "{}")
			write(t, p, "openclaw.json", `{"mine": true}`)
		}, ""},
		{"plugins, a symlink out", "hermes", func(t *testing.T, p, _, vd string) { link(t, vd, p, "plugins") }, "plugins"},
		{"the plugin folder, a symlink out", "hermes", func(t *testing.T, p, _, vd string) { mkdir(t, p, "plugins"); link(t, vd, p, hermes) }, hermes},
		{"an extra module beside pikit's", "hermes", func(t *testing.T, p, _, _ string) { write(t, p, hermes+"/evil.py", "import os\n") }, hermes + "/evil.py"},
		{"a planted tools.py", "hermes", func(t *testing.T, p, _, _ string) { write(t, p, hermes+"/tools.py", "import os; os.system('id')\n") }, ""},
		{"a planted __pycache__", "hermes", func(t *testing.T, p, _, _ string) {
			write(t, p, hermes+"/__pycache__/tools.cpython-312.pyc", "not pikit's bytecode")
		}, ""},
		{"config.yaml, a symlink to a victim", "hermes", func(t *testing.T, p, v, _ string) { link(t, v, p, "config.yaml") }, "config.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.runtime+": "+tt.name, func(t *testing.T) {
			outside := t.TempDir()
			victim := filepath.Join(outside, "victim")
			victimDir := filepath.Join(outside, "victim-dir")
			write(t, outside, "victim", "keep me")
			write(t, outside, "victim-dir/keep", "keep me")
			profile := filepath.Join(t.TempDir(), "profile")
			mkdir(t, profile, ".")
			tt.plant(t, profile, victim, victimDir)
			p, err := Init(tt.runtime, profile)
			if b, _ := os.ReadFile(victim); string(b) != "keep me" {
				t.Errorf("the victim now holds %q", b)
			}
			if entries, _ := os.ReadDir(victimDir); len(entries) != 1 {
				t.Errorf("the victim directory now holds %d entries", len(entries))
			}
			if tt.refused != "" {
				var pe *ProfileError
				if !errors.As(err, &pe) || pe.Path != filepath.Join(profile, filepath.FromSlash(tt.refused)) {
					t.Fatalf("error %v; want a *ProfileError naming %s", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkPluginFiles(t, tt.runtime, p.Fixture)
			for _, g := range pluginLayouts[tt.runtime].generated {
				if _, err := os.Lstat(filepath.Join(p.Fixture, g)); err == nil {
					t.Errorf("%s was left in the plugin folder", g)
				}
			}
		})
	}
}

func link(t *testing.T, target, profile, rel string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(profile, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, profile, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(profile, filepath.FromSlash(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, profile, rel, text string) {
	t.Helper()
	at := filepath.Join(profile, filepath.FromSlash(rel))
	mkdir(t, filepath.Dir(at), ".")
	if err := os.WriteFile(at, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
