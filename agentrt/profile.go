package agentrt

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pikit-go/pikit/internal/agentenv"
	"github.com/pikit-go/pikit/internal/procgroup"
)

// plugins holds pikit's fixture plugins, written for pikit: the Hermes
// toolset (plugins/hermes/pikit_fixture) and the OpenClaw tool plugin
// (plugins/openclaw/pikit-openclaw-fixture). They serve the protocol's
// payloads from the five source tools and record pikit_record_sink.
//
//go:embed all:plugins
var plugins embed.FS

// Where Init puts a fixture plugin and a configuration in a profile, as
// the Python pikit lays them out.
const (
	hermesPlugin   = "plugins/pikit_fixture"
	hermesConfig   = "config.yaml"
	openclawPlugin = "pikit-openclaw-fixture"
	openclawConfig = "openclaw.json"
	// OpenClawPluginID is the fixture plugin's id in OpenClaw.
	OpenClawPluginID = "pikit-fixture"
)

// Profile is what Init or InstallFixture made: the profile directory, its
// configuration file, the fixture plugin's directory, and (InstallFixture)
// what was done.
type Profile struct {
	Runtime string `json:"runtime"`
	Dir     string `json:"profile"`
	Config  string `json:"config,omitempty"`
	Fixture string `json:"fixture"`
	Status  string `json:"status,omitempty"`
}

// FixtureTools are the fixture plugins' tools: the five sources, then the
// sink.
func FixtureTools() []string {
	out := make([]string, 0, len(fixtures)+1)
	for _, k := range []string{FixtureDocument, FixtureWebpage, FixtureEmail, FixtureRAG, FixtureSkill} {
		out = append(out, fixtures[k].Tool)
	}
	return append(out, SinkTool)
}

// profileRuntime checks that a runtime has a fixture plugin.
func profileRuntime(runtime string) error {
	if runtime != "hermes" && runtime != "openclaw" {
		return fmt.Errorf("runtime %q has no fixture plugin: want openclaw or hermes", runtime)
	}
	return nil
}

// Init makes dir an isolated profile for a runtime, as the Python pikit's
// `runtime init` does: the fixture plugin's files, and a configuration
// that enables it (Hermes: config.yaml enabling the toolset; OpenClaw:
// openclaw.json allowing the fixture's tools and denying exec, browser,
// message, write and edit). No credential is written: the model's key
// comes from the environment or the runtime's own setup.
//
// The profile may be someone else's. The plugin's files are written
// fresh, each in place of what was under its name, and what a build or
// the runtime made in its folder (node_modules and dist; __pycache__) is
// removed; a folder holding anything else, or a link in pikit's place, is
// refused with a *ProfileError, as is a configuration that is a link. An
// existing configuration is kept as it is. Every write stays inside dir
// (os.Root) and none is made through a link.
func Init(runtime, dir string) (Profile, error) {
	if err := profileRuntime(runtime); err != nil {
		return Profile{}, err
	}
	at, err := filepath.Abs(dir)
	if err != nil {
		return Profile{}, err
	}
	if err := os.MkdirAll(at, 0o755); err != nil {
		return Profile{}, err
	}
	root, err := os.OpenRoot(at)
	if err != nil {
		return Profile{}, err
	}
	defer root.Close()
	layout := pluginLayouts[runtime]
	p := Profile{Runtime: runtime, Dir: at, Fixture: filepath.Join(at, filepath.FromSlash(layout.dst))}
	config, configText, err := profileConfig(runtime)
	if err != nil {
		return p, err
	}
	p.Config = filepath.Join(at, config)
	if err := checkConfig(root, p.Config, config); err != nil {
		return p, err
	}
	if err := writePlugin(root, at, layout); err != nil {
		return p, err
	}
	f, err := root.OpenFile(config, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	switch {
	case errors.Is(err, fs.ErrExist):
		return p, nil // kept as it is
	case err != nil:
		return p, err
	}
	if _, err := f.Write(configText); err != nil {
		f.Close()
		return p, err
	}
	return p, f.Close()
}

// profileConfig is the name of a runtime's configuration in a profile
// and what Init writes there.
func profileConfig(runtime string) (string, []byte, error) {
	if runtime == "hermes" {
		return hermesConfig, []byte("plugins:\n  enabled:\n    - pikit_fixture\n"), nil
	}
	cfg := map[string]any{"tools": map[string]any{
		"profile":   "minimal",
		"alsoAllow": FixtureTools(),
		"deny":      []string{"exec", "browser", "message", "write", "edit"},
	}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	return openclawConfig, append(b, '\n'), err
}

// Step is one program InstallFixture runs.
type Step struct {
	Dir  string   // working directory
	Argv []string // the program and its arguments
	Env  []string // variables added to the environment
}

// InstallSteps are the programs InstallFixture runs for a runtime whose
// profile Init made in root (executable: the runtime's program, "" for
// its default): nothing for Hermes, whose plugin needs no build. For
// OpenClaw: the plugin's dependencies exactly as its lockfile pins them,
// with no package's install script (npm ci --ignore-scripts, and
// --workspaces=false so that no package.json above the plugin makes npm
// read that folder's .npmrc); then its build with the compiler and the
// OpenClaw those pinned (run as programs, not through npm run, whose PATH
// would put every node_modules/.bin above the plugin, the profile's
// included, before the user's); then linking, enabling and registering it
// with OpenClaw under the profile's state (a local plugin, installed
// without a terminal: --force --accept-capabilities).
func InstallSteps(runtime, root, executable string) []Step {
	if runtime != "openclaw" {
		return nil
	}
	if executable == "" {
		executable = "openclaw"
	}
	fixture := filepath.Join(root, openclawPlugin)
	bin := filepath.Join(fixture, "node_modules", ".bin")
	env := []string{"OPENCLAW_STATE_DIR=" + root, "OPENCLAW_CONFIG_PATH=" + filepath.Join(root, openclawConfig)}
	return []Step{
		{Dir: fixture, Argv: []string{"npm", "ci", "--ignore-scripts", "--workspaces=false", "--no-audit", "--no-fund"}},
		{Dir: fixture, Argv: []string{filepath.Join(bin, "tsc"), "-p", "tsconfig.json"}},
		{Dir: fixture, Argv: []string{filepath.Join(bin, "openclaw"), "plugins", "build", "--entry", "./dist/index.js"}},
		// --force and --accept-capabilities: without a terminal, OpenClaw
		// cancels a local plugin's install until both are given.
		{Argv: []string{executable, "plugins", "install", fixture, "--link", "--force", "--accept-capabilities"}, Env: env},
		{Argv: []string{executable, "plugins", "enable", OpenClawPluginID}, Env: env},
		{Argv: []string{executable, "plugins", "registry", "--refresh"}, Env: env},
	}
}

// InstallOptions configure InstallFixture.
type InstallOptions struct {
	// Executable is the runtime's program; "" for its default.
	Executable string
	// PassEnv names variables of pikit's environment the programs get
	// although they look like secrets (see agentenv.Filter): a private
	// registry's token, say. The rest of the secrets are withheld.
	PassEnv []string
	// Out receives the programs' output; nil discards it.
	Out io.Writer
}

// InstallFixture makes the profile (Init) and installs the fixture plugin
// in it, as the Python pikit's `runtime install-fixture` does: for Hermes
// the plugin Init wrote is all; for OpenClaw it runs InstallSteps, each
// program's output going to o.Out, and stops at the first that fails.
// The programs get pikit's environment without its secrets (but for
// o.PassEnv).
func InstallFixture(ctx context.Context, runtime, dir string, o InstallOptions) (Profile, error) {
	p, err := Init(runtime, dir)
	if err != nil {
		return p, err
	}
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	for _, s := range InstallSteps(runtime, p.Dir, o.Executable) {
		cmd := exec.CommandContext(ctx, s.Argv[0], s.Argv[1:]...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = s.Dir, out, out
		cmd.Env, _ = agentenv.Filter(os.Environ(), o.PassEnv, s.Env)
		procgroup.Set(cmd)
		cmd.Cancel = func() error { return procgroup.Term(cmd) }
		cmd.WaitDelay = killGrace
		if err := cmd.Run(); err != nil {
			return p, fmt.Errorf("%s: %w", strings.Join(s.Argv, " "), err)
		}
	}
	p.Status = "ready: the plugin is copied and enabled in " + filepath.Base(p.Config)
	if runtime == "openclaw" {
		p.Status = "ready: the plugin is built, linked and enabled, and OpenClaw's plugin registry refreshed"
	}
	return p, nil
}

// ProfileReport is what CheckProfile found, with the Python pikit's
// `runtime doctor --json` keys.
type ProfileReport struct {
	Runtime         string `json:"runtime"`
	Executable      string `json:"executable"`
	ExecutableFound bool   `json:"executable_found"`
	FixturePath     string `json:"fixture_path"`
	FixturePresent  bool   `json:"fixture_present"`
	Profile         string `json:"profile"`
	ConfigPresent   bool   `json:"config_present"`
	// Hermes.
	FixturePluginPresent *bool `json:"fixture_plugin_present,omitempty"`
	// OpenClaw.
	FixtureBuilt         *bool    `json:"fixture_built,omitempty"`
	FixtureToolsExpected []string `json:"fixture_tools_expected,omitempty"`
	FixtureLoaded        *bool    `json:"fixture_loaded,omitempty"`
	FixtureToolsVisible  []string `json:"fixture_tools_visible,omitempty"`
	RuntimeProbeError    string   `json:"runtime_probe_error,omitempty"`

	FixtureHint string `json:"fixture_hint"`
	Ready       bool   `json:"ready"`
}

// probeTimeout bounds OpenClaw's plugin inspection.
const probeTimeout = 30 * time.Second

// CheckProfile says whether a runtime and the profile in dir ("" for
// none) are ready for fixture runs, as the Python pikit's doctor does:
// the program on PATH (executable, else the runtime's own), the fixture
// plugin's sources (embedded in pikit: always present), the profile's
// configuration and plugin; for OpenClaw, with the program and a
// configuration there, it asks OpenClaw whether the plugin is loaded and
// which of its tools it shows (`openclaw plugins inspect pikit-fixture
// --runtime --json`, bounded by probeTimeout, run without the secrets of
// pikit's environment: see agentenv.Filter).
func CheckProfile(ctx context.Context, runtime, dir, executable string) (ProfileReport, error) {
	if err := profileRuntime(runtime); err != nil {
		return ProfileReport{}, err
	}
	if executable == "" {
		executable = runtime
	}
	r := ProfileReport{Runtime: runtime, Executable: executable, FixturePath: "(built into pikit)", FixturePresent: true, Profile: dir}
	path, err := exec.LookPath(executable)
	r.ExecutableFound = err == nil
	has := func(rel string) bool {
		if dir == "" {
			return false
		}
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		return err == nil && fi.Mode().IsRegular()
	}
	yes := func(b bool) *bool { return &b }
	if runtime == "hermes" {
		r.ConfigPresent = has(hermesConfig)
		r.FixturePluginPresent = yes(has(hermesPlugin + "/plugin.yaml"))
		r.FixtureHint = "`pikit runtime init hermes DIR` copies the plugin; run with runtime_options hermes_home = DIR, safe_mode = false, toolsets = [\"pikit_fixture\"]"
		r.Ready = r.ExecutableFound && r.FixturePresent && r.ConfigPresent
		return r, nil
	}
	r.ConfigPresent = has(openclawConfig)
	r.FixtureBuilt = yes(has(openclawPlugin + "/dist/index.js"))
	r.FixtureToolsExpected = FixtureTools()
	r.FixtureHint = "`pikit runtime install-fixture openclaw DIR` builds and links the plugin; run with runtime_options state_dir = DIR, config_path = DIR/openclaw.json"
	r.FixtureLoaded = yes(false)
	r.FixtureToolsVisible = []string{}
	if r.ExecutableFound && r.ConfigPresent {
		r.probe(ctx, path, dir)
	}
	r.Ready = r.ExecutableFound && r.FixturePresent && r.ConfigPresent && *r.FixtureLoaded
	for _, t := range r.FixtureToolsExpected {
		if !slices.Contains(r.FixtureToolsVisible, t) {
			r.Ready = false
		}
	}
	return r, nil
}

// maxProbe bounds what pikit reads of OpenClaw's plugin inspection.
const maxProbe = 1 << 20

// probe asks OpenClaw about the fixture plugin in the profile dir.
func (r *ProfileReport) probe(ctx context.Context, path, dir string) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "plugins", "inspect", OpenClawPluginID, "--runtime", "--json")
	cmd.Env, _ = agentenv.Filter(os.Environ(), nil, []string{"OPENCLAW_STATE_DIR=" + dir, "OPENCLAW_CONFIG_PATH=" + filepath.Join(dir, openclawConfig)})
	stdout, stderr := procgroup.NewTail(maxProbe), procgroup.NewTail(4<<10)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	procgroup.Set(cmd)
	cmd.Cancel = func() error { return procgroup.Term(cmd) }
	cmd.WaitDelay = killGrace
	if err := cmd.Run(); err != nil {
		r.RuntimeProbeError = firstNonEmpty(strings.TrimSpace(stderr.String()), strings.TrimSpace(stdout.String()), err.Error())
		return
	}
	var got struct {
		Plugin struct {
			Status string `json:"status"`
		} `json:"plugin"`
		Tools []struct {
			Names []string `json:"names"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(strings.NewReader(stdout.String())).Decode(&got); err != nil {
		r.RuntimeProbeError = "OpenClaw's plugin inspection is not the JSON expected: " + err.Error()
		return
	}
	*r.FixtureLoaded = got.Plugin.Status == "loaded"
	for _, t := range got.Tools {
		r.FixtureToolsVisible = append(r.FixtureToolsVisible, t.Names...)
	}
}
