package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/agentrt"
	"github.com/pikit-go/pikit/internal/agentenv"
	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/matrix"
)

// runtimeFlags are the flags that choose an agent runtime, as the Python
// pikit's run command has them.
type runtimeFlags struct {
	Runtime string
	Options string // a JSON object
	Fixture string
}

// addRuntimeFlags adds --runtime, --runtime-options and --fixture.
func addRuntimeFlags(cmd *cobra.Command, f *runtimeFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.Runtime, "runtime", "", "run your own agent as a subprocess of this runtime, speaking the fixture protocol: "+strings.Join(agentrt.Names(), ", ")+" (pikit runtime doctor NAME checks it)")
	fl.StringVar(&f.Options, "runtime-options", "", `the runtime's options as a JSON object, over the config's, e.g. '{"command": ["python3", "my_agent.py"], "timeout": 120}'`)
	fl.StringVar(&f.Fixture, "fixture", "", "hand every channel's payload to this fixture: "+strings.Join(agentrt.FixtureKinds(), ", ")+" (default: each channel's own, as the Python pikit maps them)")
}

// apply puts the flags that were given into cfg and prepares it for its
// runtime, as prepareRuntime does. o gives --trust-config and --dry-run
// (nil: neither).
func (f *runtimeFlags) apply(cfg *matrix.Config, o *runOptions) error {
	fromFile, err := f.merge(cfg)
	if err != nil {
		return err
	}
	return prepareRuntimeFrom(cfg, fromFile, o)
}

// merge puts the flags that were given into cfg: options from the flag
// replace the config's one by one; a command replaces executable (or
// binary) and args, and any of those a command. It returns the program keys the config's
// file still chooses.
func (f *runtimeFlags) merge(cfg *matrix.Config) (fromFile []string, err error) {
	fileRuntime := cfg.Source != "" && cfg.Runtime != "" && f.Runtime == ""
	if f.Runtime != "" {
		cfg.Runtime = f.Runtime
	}
	var opts map[string]any
	if f.Options != "" {
		if err := json.Unmarshal([]byte(f.Options), &opts); err != nil || opts == nil {
			msg := "want a JSON object"
			if err != nil {
				msg += fmt.Sprintf(" (%v)", err)
			}
			return nil, usage(fmt.Errorf(`--runtime-options: %s, e.g. '{"command": ["python3", "my_agent.py"]}'`, msg))
		}
	}
	if f.Fixture != "" {
		cfg.Fixture = f.Fixture
	}
	if cfg.Runtime == "" && (f.Options != "" || f.Fixture != "") {
		return nil, usage(errors.New("--runtime-options and --fixture need --runtime (or a config that names a runtime)"))
	}
	merged := make(map[string]any, len(cfg.RuntimeOptions)+len(opts))
	for k, v := range cfg.RuntimeOptions {
		merged[k] = v
	}
	if _, ok := opts["command"]; ok {
		delete(merged, "binary")
		delete(merged, "executable")
		delete(merged, "args")
	}
	for _, k := range []string{"binary", "executable", "args"} {
		if _, ok := opts[k]; ok {
			delete(merged, "command")
		}
	}
	if _, ok := opts["binary"]; ok {
		delete(merged, "executable")
	}
	if _, ok := opts["executable"]; ok {
		delete(merged, "binary")
	}
	fromFile = fileRuntimeKeys(cfg.Source, fileRuntime, merged, opts)
	for k, v := range opts {
		merged[k] = v
	}
	if opts != nil {
		cfg.RuntimeOptions = merged
	}
	return fromFile, nil
}

// prepareRuntime checks the runtime a config names (runtime,
// runtime_options, fixture) and marks the config as driven by it, so that
// its plan has the one external agent "runtime:NAME". Call it after a
// config is loaded and before it is expanded; a config that names no
// runtime is left alone. o gives --trust-config and --dry-run (nil:
// neither).
//
// A runtime runs a program on this machine, with the user's environment:
// a config or dataset file that names one (runtime), or any of its
// options (runtime_options: the program, its arguments, its message, its
// directories), is refused without --trust-config, as a file's base_url
// is; --dry-run, which runs nothing, lists it as refused.
func prepareRuntime(cfg *matrix.Config, o *runOptions) error {
	return prepareRuntimeFrom(cfg, fileRuntimeKeys(cfg.Source, cfg.Runtime != "", cfg.RuntimeOptions, nil), o)
}

// fileRuntimeKeys returns what a file chooses of a runtime: "runtime"
// when it names the runtime itself (named, and no flag replaced it), then
// "runtime_options.KEY" for each of its options that override (the
// flags' options) does not replace. None for a config built from flags
// alone (source "").
func fileRuntimeKeys(source string, named bool, options, override map[string]any) []string {
	if source == "" {
		return nil
	}
	var out []string
	if named {
		out = append(out, "runtime")
	}
	keys := make([]string, 0, len(options))
	for k := range options {
		if _, replaced := override[k]; !replaced {
			keys = append(keys, "runtime_options."+k)
		}
	}
	sort.Strings(keys)
	return append(out, keys...)
}

func prepareRuntimeFrom(cfg *matrix.Config, fromFile []string, o *runOptions) error {
	if cfg.Runtime == "" {
		return nil
	}
	rt, err := agentrt.FromConfig(cfg)
	if err != nil {
		return err
	}
	if len(fromFile) > 0 && (o == nil || !o.TrustConfig) {
		key := fromFile[0]
		refusal := &matrix.Error{File: cfg.Source, Line: cfg.Line(key), Case: cfg.CaseID, Key: key,
			Msg: fmt.Sprintf("this file chooses an agent that each cell runs on this machine with your environment (runtime %s: %s); "+
				"pikit runs what a file names only with --trust-config (or give --runtime and --runtime-options yourself)", cfg.Runtime, strings.Join(rt.Argv, " "))}
		if o == nil || !o.DryRun {
			return refusal
		}
		o.refused = append(o.refused, refusal)
	}
	cfg.Driven = "runtime:" + cfg.Runtime
	return nil
}

// runtimeDriver returns the driver that a config's runtime key chooses
// (nil when no config of src names one). Before any cell it finds each
// runtime's program and directories, and says on stderr what will run.
func runtimeDriver(streams IO, src matrix.Source, _ *runOptions) (matrix.Driver, error) {
	cfgs := matrix.Configs(src)
	var with, without *matrix.Config
	for _, c := range cfgs {
		if c.Runtime != "" {
			with = c
		} else {
			without = c
		}
	}
	if with == nil {
		return nil, nil
	}
	if without != nil {
		return nil, fmt.Errorf("%s names runtime %q but %s names none: a run drives one kind of agent; run them apart", runtimeSource(with), with.Runtime, runtimeSource(without))
	}
	d := &agentrt.Driver{}
	shown := map[string]bool{}
	for _, c := range cfgs {
		if c.Driven != "runtime:"+c.Runtime {
			return nil, fmt.Errorf("%s: runtime %q: the config was planned without its runtime (prepareRuntime was not called before expanding it)", runtimeSource(c), c.Runtime)
		}
		rt, err := d.Runtime(c)
		if err != nil {
			return nil, err
		}
		if err := rt.Check(); err != nil {
			if c.Source != "" {
				err = fmt.Errorf("%s: %w", runtimeSource(c), err)
			}
			return nil, fmt.Errorf("%w (pikit runtime doctor %s says what is missing)", err, rt.Name)
		}
		line := fmt.Sprintf("runtime %s: %s (timeout %v; a fresh directory per cell)", rt.Name, strings.Join(rt.Argv, " "), rt.Timeout)
		if !shown[line] {
			shown[line] = true
			fmt.Fprintln(streams.ErrOut, line)
		}
	}
	return d, nil
}

// runtimeSource names a config in messages.
func runtimeSource(c *matrix.Config) string {
	s := c.Source
	if s == "" {
		s = "the command line"
	}
	if c.CaseID != "" {
		s += ", case " + c.CaseID
	}
	return s
}

func newRuntimeCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runtime",
		Short: "Run your own agent as a subprocess, with the Python pikit's fixture protocol",
		Long: `A config's runtime key (or pikit run --runtime) runs your own agent as a
subprocess for each cell instead of pikit's tool loop. The agent gets the
cell's payload in PIKIT_FIXTURE_PAYLOADS (a JSON object: fixture key → text),
appends JSONL events (tool_result, sink_call, policy_block,
approval_requested, tool_error, final) to the file PIKIT_FIXTURE_TRACE_PATH
names, and answers on stdout; pikit judges what it reported.

Runtimes: command (any program speaking the protocol, runtime_options.command),
openclaw and hermes (those CLIs, with the Python pikit's command lines and
options, overridable with runtime_options executable, args or command).
Without state_dir (openclaw) or hermes_home (hermes), each cell gets a fresh
profile, a copy of runtime_options.profile_template when given.`,
		Args: func(cmd *cobra.Command, a []string) error {
			if len(a) == 0 {
				return nil
			}
			return usage(fmt.Errorf("unknown command %q for pikit runtime; its commands: list, init, install-fixture, doctor", a[0]))
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRuntimeListCmd(streams), newRuntimeInitCmd(streams), newRuntimeInstallCmd(streams), newRuntimeDoctorCmd(streams))
	return cmd
}

func newRuntimeListCmd(streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the runtimes and their default command lines",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUNTIME\tCOMMAND LINE\tABOUT")
			for _, name := range agentrt.Names() {
				b, _ := agentrt.Lookup(name)
				line := "runtime_options.command"
				if b.Binary != "" {
					rt, err := agentrt.New(name, nil, "")
					if err != nil {
						return err
					}
					line = strings.Join(rt.Argv, " ")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Name, line, b.About)
			}
			return tw.Flush()
		},
	}
}

// profileArgs checks RUNTIME DIR for init and install-fixture.
func profileArgs(cmd *cobra.Command, a []string) error {
	if len(a) != 2 {
		return usage(fmt.Errorf("want RUNTIME DIR: openclaw or hermes, and the profile directory to make"))
	}
	if a[0] != "openclaw" && a[0] != "hermes" {
		return usage(fmt.Errorf("runtime %q has no fixture plugin: want openclaw or hermes", a[0]))
	}
	return nil
}

// writeProfile prints what init or install-fixture made: key: value
// lines, or JSON.
func writeProfile(streams IO, p agentrt.Profile, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(streams.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	w := streams.Out
	fmt.Fprintf(w, "runtime: %s\nprofile: %s\n", p.Runtime, p.Dir)
	if p.Config != "" {
		fmt.Fprintf(w, "config: %s\n", p.Config)
	}
	fmt.Fprintf(w, "fixture: %s\n", p.Fixture)
	if p.Status != "" {
		fmt.Fprintf(w, "status: %s\n", p.Status)
	}
	return nil
}

func newRuntimeInitCmd(streams IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "init RUNTIME DIR",
		Short: "Make an isolated OpenClaw or Hermes profile with pikit's fixture plugin",
		Long: `Make DIR a profile for the runtime, as the Python pikit's runtime init does:
pikit's fixture plugin (source tools that hand over the cell's payload, and a
sink, pikit_record_sink, that records and performs nothing) and a
configuration that enables it. Hermes: DIR/plugins/pikit_fixture and
DIR/config.yaml. OpenClaw: DIR/pikit-openclaw-fixture (build and link it with
install-fixture) and DIR/openclaw.json, which allows the fixture's tools and
denies exec, browser, message, write and edit. No credential is written: give
the model's key in the environment.

DIR may be someone else's profile. A configuration already there is kept,
unless it is a link (refused). The plugin's files are written fresh over what
is under their names, and what a build or the runtime made in its folder
(node_modules and dist; __pycache__) is removed; a plugin folder that holds
anything else, or a link in pikit's place, is refused (exit 2) before anything
is written. Nothing is written outside DIR, nor through a link.

Then run cells with runtime_options naming the profile (Hermes: hermes_home =
DIR, safe_mode = false, toolsets = ["pikit_fixture"]; OpenClaw: state_dir =
DIR, config_path = DIR/openclaw.json), or profile_template = DIR for a fresh
copy per cell.`,
		Example: `  pikit runtime init hermes ./hermes-profile
  pikit runtime init openclaw ./openclaw-profile --json`,
		Args: profileArgs,
		RunE: func(cmd *cobra.Command, a []string) error {
			p, err := agentrt.Init(a[0], a[1])
			if err != nil {
				return profileError(fmt.Errorf("runtime init %s %s: %w", a[0], a[1], err))
			}
			return writeProfile(streams, p, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was made as JSON")
	return cmd
}

func newRuntimeInstallCmd(streams IO) *cobra.Command {
	var (
		asJSON     bool
		executable string
		passEnv    []string
	)
	cmd := &cobra.Command{
		Use:   "install-fixture RUNTIME DIR",
		Short: "Make the profile (init) and install pikit's fixture plugin in it",
		Long: `Make DIR a profile as init does (pikit's plugin files written fresh, a
folder holding anything else refused), then install the fixture plugin, as
the Python pikit's runtime install-fixture does. Hermes needs nothing more.
For OpenClaw it runs, in order, in the plugin's directory: npm ci
--ignore-scripts --workspaces=false (the dependencies its package-lock.json
pins, no package's install script run), then the TypeScript compiler and
openclaw plugins build from those (not through npm run); then openclaw plugins
install DIR/pikit-openclaw-fixture --link --force --accept-capabilities (a
local plugin: without a terminal, OpenClaw installs it only with both),
openclaw plugins enable pikit-fixture and openclaw plugins registry --refresh,
with OPENCLAW_STATE_DIR and OPENCLAW_CONFIG_PATH pointing at DIR.

Every program runs without the variables of your environment that look like
secrets (API keys, tokens, cloud credentials): pikit says which it left out;
--pass-env NAME passes one (a private registry's token, say).
Their output goes to stderr; the first that fails stops it (exit 1).`,
		Example: `  pikit runtime install-fixture openclaw ./openclaw-profile
  pikit runtime install-fixture openclaw ./openclaw-profile --executable ~/.npm-global/bin/openclaw`,
		Args: profileArgs,
		RunE: func(cmd *cobra.Command, a []string) error {
			for _, name := range passEnv {
				if !agentenv.ValidName(name) {
					return usage(fmt.Errorf("--pass-env: %q is not a variable name (letters, digits and _, not starting with a digit; the value comes from your environment)", name))
				}
			}
			if a[0] == "openclaw" { // Hermes runs nothing
				noteWithheld(streams.ErrOut, passEnv, "pikit runtime", "npm and openclaw run", "they need one (a private registry's token)")
			}
			out := termsafe.NewWriter(streams.ErrOut)
			p, err := agentrt.InstallFixture(cmd.Context(), a[0], a[1], agentrt.InstallOptions{Executable: executable, PassEnv: passEnv, Out: out})
			out.Flush()
			var pe *agentrt.ProfileError
			switch {
			case errors.As(err, &pe): // refused: nothing written, nothing run
				return usage(fmt.Errorf("runtime install-fixture %s %s: %w", a[0], a[1], err))
			case err != nil:
				fmt.Fprintf(streams.ErrOut, "pikit: runtime install-fixture %s %s: %v\n", a[0], a[1], err)
				return errFailed
			}
			return writeProfile(streams, p, asJSON)
		},
	}
	cmd.Flags().StringVar(&executable, "executable", "", "the runtime's program (default: openclaw on PATH)")
	cmd.Flags().StringArrayVar(&passEnv, "pass-env", nil, "pass the variable `NAME` of your environment to npm and openclaw although it looks like a secret (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was made as JSON")
	return cmd
}

// profileError makes a profile pikit refused (agentrt.ProfileError) a
// usage error, exit 2: nothing was written or run. Others are returned.
func profileError(err error) error {
	var pe *agentrt.ProfileError
	if errors.As(err, &pe) {
		return usage(err)
	}
	return err
}

type runtimeDoctorOptions struct {
	runtimeFlags
	Config      string
	TrustConfig bool
	Executable  string
	JSON        bool
}

func newRuntimeDoctorCmd(streams IO) *cobra.Command {
	o := &runtimeDoctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor [NAME [DIR]]",
		Short: "Say what a runtime needs and what of it is installed",
		Long: `Find the runtime's program (on PATH, or where runtime_options names it) and
ask it for --version (not for command, whose program may not take it),
with a throw-away profile and a 10-second bound. Exit status 0 when the
runtime is usable, 1 when something is missing, 2 for an unknown runtime
or bad options.

Given a profile DIR (openclaw, hermes), it also checks the profile as the
Python pikit's runtime doctor does: the configuration and the fixture plugin
there and, for OpenClaw, whether OpenClaw has the plugin loaded and shows its
six tools (openclaw plugins inspect pikit-fixture --runtime --json). --json
prints that check with the Python pikit's keys.`,
		Example: `  pikit runtime doctor openclaw
  pikit runtime doctor hermes --runtime-options '{"executable": "/opt/hermes/bin/hermes"}'
  pikit runtime doctor command --runtime-options '{"command": ["python3", "my_agent.py"]}'
  pikit runtime doctor --config experiment.toml
  pikit runtime doctor openclaw ./openclaw-profile --executable /opt/bin/openclaw --json`,
		Args: args(cobra.MaximumNArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			cfg := matrix.NewConfig()
			if o.Config != "" {
				var err error
				if cfg, err = loadConfig(o.Config); err != nil {
					return err
				}
			}
			if len(a) >= 1 {
				o.Runtime = a[0]
			}
			if len(a) == 2 || o.JSON {
				return runtimeProfileDoctor(cmd.Context(), streams, o, a)
			}
			if o.Runtime == "" && cfg.Runtime == "" {
				return usage(fmt.Errorf("name a runtime (%s), or give --config FILE that names one", strings.Join(agentrt.Names(), ", ")))
			}
			name := o.Runtime
			if name == "" {
				name = cfg.Runtime
			}
			if _, err := agentrt.Lookup(name); err != nil {
				return usage(err)
			}
			fromFile, err := o.merge(&cfg)
			if err != nil {
				return err
			}
			rt, err := agentrt.FromConfig(&cfg)
			if err != nil {
				return runtimeDoctorUnnamed(streams, &cfg, err)
			}
			// A program a file chose is found, but run (--version) only
			// with --trust-config.
			ask := o.TrustConfig || len(fromFile) == 0
			r := agentrt.Doctor(cmd.Context(), rt, ask)
			if !ask && r.Path != "" {
				r.Notes = append(r.Notes, fmt.Sprintf("--version not run: %s chose the program; --trust-config lets doctor run it", o.Config))
			}
			return writeDoctor(streams, r)
		},
	}
	cmd.Flags().StringVarP(&o.Config, "config", "c", "", "check the runtime a config `FILE` names, with its runtime_options")
	cmd.Flags().StringVar(&o.Options, "runtime-options", "", `the runtime's options as a JSON object, e.g. '{"executable": "/opt/bin/openclaw"}'`)
	cmd.Flags().StringVar(&o.Fixture, "fixture", "", "the fixture every channel's payload goes to")
	cmd.Flags().BoolVar(&o.TrustConfig, "trust-config", false, "let doctor run --version of a program the --config file chose")
	cmd.Flags().StringVar(&o.Executable, "executable", "", "the runtime's program (with a profile DIR)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the profile check as JSON, with the Python pikit's keys")
	return cmd
}

// runtimeProfileDoctor checks a runtime and a profile directory, as the
// Python pikit's doctor does; exit 1 when it is not ready.
func runtimeProfileDoctor(ctx context.Context, streams IO, o *runtimeDoctorOptions, a []string) error {
	if len(a) == 0 {
		return usage(errors.New("name the runtime (openclaw or hermes), and its profile directory"))
	}
	if o.Config != "" || o.Options != "" || o.Fixture != "" {
		return usage(errors.New("a profile check takes RUNTIME DIR and --executable; --config, --runtime-options and --fixture check a runtime without a profile"))
	}
	dir := ""
	if len(a) == 2 {
		dir = a[1]
	}
	r, err := agentrt.CheckProfile(ctx, a[0], dir, o.Executable)
	if err != nil {
		return usage(err)
	}
	if o.JSON {
		enc := json.NewEncoder(streams.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		w := streams.Out
		fmt.Fprintf(w, "runtime: %s\nprogram: %s (found: %v)\nprofile: %s\nconfiguration: %v\n", r.Runtime, r.Executable, r.ExecutableFound, r.Profile, r.ConfigPresent)
		if r.FixturePluginPresent != nil {
			fmt.Fprintf(w, "fixture plugin: %v\n", *r.FixturePluginPresent)
		}
		if r.FixtureBuilt != nil {
			fmt.Fprintf(w, "fixture built: %v\nfixture loaded: %v\ntools shown: %s\n", *r.FixtureBuilt, *r.FixtureLoaded, strings.Join(r.FixtureToolsVisible, ", "))
		}
		if r.RuntimeProbeError != "" {
			fmt.Fprintf(w, "OpenClaw said: %s\n", termsafe.Line(r.RuntimeProbeError))
		}
		fmt.Fprintf(w, "hint: %s\nready: %v\n", r.FixtureHint, r.Ready)
	}
	if !r.Ready {
		return errFailed
	}
	return nil
}

// runtimeDoctorUnnamed answers for the command runtime given no program:
// nothing to install, nothing to check. Any other error is returned.
func runtimeDoctorUnnamed(streams IO, cfg *matrix.Config, err error) error {
	_, hasCommand := cfg.RuntimeOptions["command"]
	_, hasBinary := cfg.RuntimeOptions["binary"]
	_, hasExecutable := cfg.RuntimeOptions["executable"]
	if cfg.Runtime != "command" || hasCommand || hasBinary || hasExecutable {
		return err
	}
	b, _ := agentrt.Lookup("command")
	fmt.Fprintf(streams.Out, "runtime: command — %s\n", b.About)
	fmt.Fprintln(streams.Out, `program: none given; name it to check it: --runtime-options '{"command": ["python3", "my_agent.py"]}'`)
	fmt.Fprintln(streams.Out, "status: usable (it needs nothing installed)")
	return nil
}

// writeDoctor prints a doctor's report; a runtime that is not usable is
// exit status 1.
func writeDoctor(streams IO, r *agentrt.Report) error {
	w := streams.Out
	fmt.Fprintf(w, "runtime: %s — %s\n", r.Runtime, r.About)
	fmt.Fprintf(w, "command line: %s\n", strings.Join(r.Argv, " "))
	if r.Path != "" {
		fmt.Fprintf(w, "program: %s — found: %s\n", r.Argv[0], r.Path)
	}
	if r.Version != "" {
		fmt.Fprintf(w, "version: %s\n", r.Version)
	}
	fmt.Fprintf(w, "profile: %s\n", r.Isolation)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "missing: %s\n", p)
	}
	if !r.OK() {
		fmt.Fprintf(w, "status: not usable (%d problem(s))\n", len(r.Problems))
		return errFailed
	}
	fmt.Fprintln(w, "status: usable")
	return nil
}
