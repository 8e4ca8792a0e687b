package agentrt

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/pikit-go/pikit/internal/agentenv"
	"github.com/pikit-go/pikit/internal/procgroup"
)

// VersionTimeout bounds the --version call of Doctor.
const VersionTimeout = 10 * time.Second

// maxVersion bounds how much of --version's output Doctor keeps.
const maxVersion = 4 << 10

// Report is what Doctor found about a runtime.
type Report struct {
	Runtime string
	About   string
	// Argv is the command line each cell runs, placeholders unexpanded.
	Argv []string
	// Path is where the program is; "" when it was not found.
	Path string
	// Version is the first lines of the program's --version output.
	Version string
	// Isolation says how each cell gets a fresh profile.
	Isolation string
	// Problems make the runtime unusable; Notes are worth knowing.
	Problems []string
	Notes    []string
}

// OK reports whether the runtime is usable.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Doctor says what a runtime needs and what of it is here: the program on
// PATH and, when ask is set, its --version (run with a fresh profile,
// bounded by VersionTimeout; never for the generic command runtime, whose
// program may not take --version), and the directories runtime_options
// names.
func Doctor(ctx context.Context, rt *Runtime, ask bool) *Report {
	b, _ := Lookup(rt.Name)
	r := &Report{Runtime: rt.Name, About: b.About, Argv: rt.Argv}
	var vars []string
	for _, kv := range rt.Env {
		if strings.Contains(kv[1], PlaceProfileDir) {
			vars = append(vars, kv[0])
		}
	}
	if len(vars) > 0 {
		r.Isolation = fmt.Sprintf("a fresh directory per cell; %s point into it", strings.Join(vars, ", "))
	} else {
		r.Isolation = "a fresh directory per cell for the trace ({profile_dir} in args or env points at its profile directory)"
	}
	path, err := rt.LookPath()
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
	} else {
		r.Path = path
	}
	if err := rt.Check(); err != nil && r.Path != "" {
		r.Problems = append(r.Problems, err.Error())
	}
	switch {
	case r.Path == "", !ask:
	case rt.Name == "command":
		r.Notes = append(r.Notes, "--version not run: a generic agent command may not take it")
	default:
		v, err := rt.version(ctx, path)
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
		r.Version = v
	}
	if rt.Name != "command" {
		r.Notes = append(r.Notes,
			"without state_dir/config_path (openclaw) or hermes_home (hermes), each cell starts from an empty profile: copy one made by `pikit runtime init` into each with runtime_options.profile_template, or name it with those options",
			"the command line is the Python pikit's; override it with runtime_options.executable and args (or command)")
	}
	return r
}

// version runs the program with --version, with the runtime's profile
// variables pointing at a throw-away directory.
func (rt *Runtime) version(ctx context.Context, path string) (string, error) {
	dir, err := os.MkdirTemp(rt.ProfileDir, "pikit-doctor-")
	if err != nil {
		return "", fmt.Errorf("profile directory: %w", err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, VersionTimeout)
	defer cancel()
	expand := strings.NewReplacer(PlaceProfileDir, dir).Replace
	// No secret of pikit's environment: --version needs none.
	env, _ := agentenv.Filter(os.Environ(), nil, nil)
	for _, kv := range rt.Env {
		env = append(env, kv[0]+"="+expand(kv[1]))
	}
	out := &head{max: maxVersion}
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = rt.Cwd, env, out, out
	procgroup.Set(cmd)
	cmd.Cancel = func() error { return procgroup.Kill(cmd) }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	procgroup.Kill(cmd)
	text := firstLines(string(out.buf), 3)
	switch {
	case ctx.Err() != nil:
		return text, fmt.Errorf("%s --version did not answer within %v", path, VersionTimeout)
	case err != nil:
		return text, fmt.Errorf("%s --version failed (%v): %s", path, err, text)
	}
	return text, nil
}

// head keeps the first max bytes written to it.
type head struct {
	max int
	buf []byte
}

func (h *head) Write(p []byte) (int, error) {
	if room := h.max - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// firstLines returns up to n first non-empty lines of s, joined by " | ".
func firstLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && len(out) < n {
			out = append(out, l)
		}
	}
	return strings.Join(out, " | ")
}
