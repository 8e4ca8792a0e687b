package agentrt

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pikit-go/pikit/internal/suggest"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/method"
)

// DefaultTimeout bounds one cell's agent process when runtime_options
// gives no timeout.
const DefaultTimeout = 5 * time.Minute

// maxTimeout is the largest timeout runtime_options may ask for.
const maxTimeout = 24 * time.Hour

// Builtin is a runtime pikit knows by name: the program it runs, the
// runtime_options its adapter reads beside the common ones, and how each
// cell's command line and environment are made from them.
//
// The openclaw and hermes command lines are the Python pikit's: one
// headless turn per cell (`openclaw agent --local --json --message MSG
// --session-key K`, `hermes --oneshot MSG --safe-mode`), with its options
// (model, agent, thinking, provider, toolsets, safe_mode) and its state
// variables (OPENCLAW_STATE_DIR and OPENCLAW_CONFIG_PATH from state_dir and
// config_path, HERMES_HOME from hermes_home). Every part is overridable
// (executable, args or command, env).
type Builtin struct {
	Name  string
	About string
	// Binary is the default executable ("" for command, which has none).
	Binary string
	// Options are the runtime_options keys of this runtime's own, beside
	// commonOptions.
	Options []string
	// Install says how to get the binary.
	Install string
	// JSONOutput: the runtime prints its answer inside a JSON document
	// (see answerText).
	JSONOutput bool
}

var builtins = []Builtin{
	{
		Name:  "command",
		About: "any executable speaking the fixture protocol, named by runtime_options.command",
	},
	{
		Name:    "hermes",
		About:   "Nous Research's Hermes Agent CLI, one headless turn per cell (hermes --oneshot)",
		Binary:  "hermes",
		Options: []string{"hermes_home", "model", "provider", "safe_mode", "toolsets"},
		Install: "see https://hermes-agent.nousresearch.com (installs the hermes command)",
	},
	{
		Name:       "openclaw",
		About:      "the OpenClaw CLI, one local headless agent turn per cell (openclaw agent --local --json)",
		Binary:     "openclaw",
		Options:    []string{"agent", "config_path", "model", "session_key", "state_dir", "thinking"},
		Install:    "npm install -g openclaw",
		JSONOutput: true,
	},
}

// Names returns the runtimes pikit knows, sorted.
func Names() []string {
	out := make([]string, len(builtins))
	for i, b := range builtins {
		out[i] = b.Name
	}
	sort.Strings(out)
	return out
}

// Lookup returns a built-in runtime; the error names the known ones and
// wraps method.ErrUnknown.
func Lookup(name string) (Builtin, error) {
	for _, b := range builtins {
		if b.Name == name {
			return b, nil
		}
	}
	return Builtin{}, &method.UnknownError{Kind: "runtime", Name: name, Known: Names()}
}

// Placeholders expanded in args, command and env values, per cell.
const (
	PlaceMessage    = "{message}"     // the user's request to the agent
	PlaceProfileDir = "{profile_dir}" // the cell's fresh profile directory
	PlaceSession    = "{session}"     // a session id unique to the cell
	PlaceFixture    = "{fixture}"     // the fixture key that got the payload
	PlaceTracePath  = "{trace_path}"  // the trace file (also PIKIT_FIXTURE_TRACE_PATH)
)

// commonOptions are the runtime_options keys every runtime accepts: the
// Python pikit's (executable, system, timeout, env) and pikit's own.
// binary is an older name of executable.
var commonOptions = []string{"args", "binary", "command", "cwd", "env", "executable", "message", "profile_dir", "profile_template", "system", "timeout"}

// Runtime is a runtime resolved from a config: what each cell runs, and
// how.
type Runtime struct {
	Name string
	// Argv is the command line, placeholders unexpanded.
	Argv []string
	// Cwd is the agent's working directory ("": pikit's).
	Cwd string
	// Env is added to pikit's environment: the runtime's state variables,
	// then runtime_options.env (which wins), placeholders unexpanded. The
	// protocol's variables are set last.
	Env [][2]string
	// Timeout bounds one cell's process; on expiry its process group is
	// killed and the cell is a runtime error.
	Timeout time.Duration
	// ProfileDir is where each cell's fresh directory is made ("": the
	// system's temporary directory); ProfileTemplate, when set, is a
	// directory copied into each (a plugin and its configuration).
	ProfileDir      string
	ProfileTemplate string
	// Message is runtime_options.message ("": the config's user_message,
	// else a request suited to the fixture).
	Message string
	// System is runtime_options.system: recorded in the trace as the
	// agent's system prompt, after the cell's defense (the runtime keeps
	// its own; the Python pikit records it the same way).
	System string
	// Fixture is the config's fixture key: where every channel's payload
	// goes ("": each channel's fixture from the table, see mapChannel).
	Fixture string
	// JSONOutput: the answer is read out of a JSON document on stdout.
	JSONOutput bool
}

// OptionError is a bad runtime option; Key is its path in the config
// ("runtime_options.timeout", "fixture").
type OptionError struct {
	Key string
	Msg string
}

func (e *OptionError) Error() string { return e.Key + ": " + e.Msg }

// New resolves a runtime from the Python pikit's keys: runtime,
// runtime_options and fixture.
func New(name string, options map[string]any, fixture string) (*Runtime, error) {
	b, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{Name: name, Timeout: DefaultTimeout, JSONOutput: b.JSONOutput}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &OptionError{Key: "runtime_options." + key, Msg: fmt.Sprintf(format, args...)})
	}
	str := func(key string) string {
		v, ok := options[key]
		if !ok {
			return ""
		}
		s, isString := v.(string)
		if !isString || s == "" {
			bad(key, "want a non-empty string, got %s", method.Describe(v))
		}
		return s
	}
	known := append(slices.Clone(commonOptions), b.Options...)
	sort.Strings(known)
	for _, k := range slices.Sorted(maps.Keys(options)) {
		if !slices.Contains(known, k) {
			bad(k, "unknown option for runtime %s%s; valid options: %s", name, suggest.Hint(k, known), strings.Join(known, ", "))
		}
	}

	executable := b.Binary
	for _, k := range []string{"binary", "executable"} {
		if s := str(k); s != "" {
			executable = s
		}
	}
	_, hasCommand := options["command"]
	if hasCommand {
		for _, k := range []string{"executable", "binary", "args"} {
			if _, ok := options[k]; ok {
				bad("command", "give command, or executable and args, not both")
				break
			}
		}
		if argv, err := argList(options["command"]); err != nil {
			bad("command", "%v", err)
		} else if len(argv) == 0 || argv[0] == "" {
			bad("command", "empty: want the program and its arguments")
		} else {
			rt.Argv = argv
		}
	} else if executable != "" {
		args := rt.builtinArgs(options, str, bad)
		if v, ok := options["args"]; ok {
			if args, err = argList(v); err != nil {
				bad("args", "%v", err)
			}
		}
		rt.Argv = append([]string{executable}, args...)
	} else if len(errs) == 0 {
		bad("command", `required by runtime %q: the agent's command line, e.g. command = ["python3", "my_agent.py"]`, name)
	}
	rt.Env = rt.builtinEnv(options, str)
	rt.Cwd = str("cwd")
	rt.ProfileDir = str("profile_dir")
	rt.ProfileTemplate = str("profile_template")
	rt.Message = str("message")
	rt.System = str("system")
	if v, ok := options["env"]; ok {
		env, err := envTable(v)
		if err != nil {
			bad("env", "%v", err)
		}
		rt.Env = append(rt.Env, env...)
	}
	if v, ok := options["timeout"]; ok {
		if rt.Timeout, err = timeout(v); err != nil {
			bad("timeout", "%v", err)
		}
	}
	if fixture != "" {
		_, plugin := fixtures[fixture]
		switch {
		case name != "command" && !plugin:
			errs = append(errs, &OptionError{Key: "fixture", Msg: fmt.Sprintf("unknown fixture %q; the %s fixture plugin's: %s", fixture, name, strings.Join(FixtureKinds(), ", "))})
		case !validKind(fixture):
			errs = append(errs, &OptionError{Key: "fixture", Msg: fmt.Sprintf("%q is not a fixture key (letters, digits, _, - and .); the fixture plugins': %s", fixture, strings.Join(FixtureKinds(), ", "))})
		}
		rt.Fixture = fixture
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rt, nil
}

// builtinArgs makes a built-in runtime's arguments from its options, as
// the Python pikit's adapters do; the session key defaults to one per
// cell (the Python pikit's one fixed key would carry a conversation from
// cell to cell).
func (rt *Runtime) builtinArgs(options map[string]any, str func(string) string, bad func(key, format string, args ...any)) []string {
	flag := func(args []string, name, key string) []string {
		if s := str(key); s != "" {
			return append(args, name, s)
		}
		return args
	}
	switch rt.Name {
	case "openclaw":
		args := []string{"agent", "--local", "--json", "--message", PlaceMessage}
		args = flag(args, "--agent", "agent")
		args = flag(args, "--model", "model")
		if s := str("session_key"); s != "" {
			args = append(args, "--session-key", s)
		} else {
			args = append(args, "--session-key", "agent:main:"+PlaceSession)
		}
		return flag(args, "--thinking", "thinking")
	case "hermes":
		args := []string{"--oneshot", PlaceMessage}
		safe := true
		if v, ok := options["safe_mode"]; ok {
			b, isBool := v.(bool)
			if !isBool {
				bad("safe_mode", "want true or false, got %s", method.Describe(v))
			}
			safe = b
		}
		if safe {
			args = append(args, "--safe-mode")
		}
		args = flag(args, "--model", "model")
		args = flag(args, "--provider", "provider")
		if v, ok := options["toolsets"]; ok {
			sets, err := argList(v)
			if err == nil && len(sets) == 0 {
				err = errors.New(`empty: name the toolsets, e.g. ["pikit_fixture"]`)
			}
			if err != nil {
				bad("toolsets", "%v", err)
			} else {
				args = append(args, "--toolsets", strings.Join(sets, ","))
			}
		}
		return args
	}
	return nil
}

// builtinEnv gives a built-in runtime its state: the directories its
// options name, else the cell's fresh profile directory (a copy of
// profile_template, such as a directory `pikit runtime init` made), with
// HOME there too so that nothing of the user's own profile is read or
// written.
func (rt *Runtime) builtinEnv(options map[string]any, str func(string) string) [][2]string {
	switch rt.Name {
	case "openclaw":
		var env [][2]string
		if dir := str("state_dir"); dir != "" {
			env = append(env, [2]string{"OPENCLAW_STATE_DIR", dir})
		} else {
			env = append(env, [2]string{"HOME", PlaceProfileDir}, [2]string{"OPENCLAW_STATE_DIR", PlaceProfileDir})
		}
		if p := str("config_path"); p != "" {
			env = append(env, [2]string{"OPENCLAW_CONFIG_PATH", p})
		}
		return env
	case "hermes":
		if dir := str("hermes_home"); dir != "" {
			return [][2]string{{"HERMES_HOME", dir}}
		}
		return [][2]string{{"HOME", PlaceProfileDir}, {"HERMES_HOME", PlaceProfileDir}}
	}
	return nil
}

// FromConfig resolves the runtime a config names; its errors are config
// errors naming the file, line and key.
func FromConfig(cfg *matrix.Config) (*Runtime, error) {
	rt, err := New(cfg.Runtime, cfg.RuntimeOptions, cfg.Fixture)
	if err == nil {
		return rt, nil
	}
	var out []error
	for _, e := range unjoin(err) {
		var oe *OptionError
		switch {
		case errors.As(e, &oe):
			out = append(out, &matrix.Error{File: cfg.Source, Line: cfg.Line(oe.Key), Case: cfg.CaseID, Key: oe.Key, Msg: oe.Msg})
		case errors.Is(e, method.ErrUnknown):
			out = append(out, &matrix.Error{File: cfg.Source, Line: cfg.Line("runtime"), Case: cfg.CaseID, Key: "runtime", Msg: e.Error()})
		default:
			out = append(out, e)
		}
	}
	return nil, errors.Join(out...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Check finds what a run needs before any cell: the program (on PATH, or
// at its path), the working directory, and the profile directories.
// Nothing is run.
func (rt *Runtime) Check() error {
	if _, err := rt.LookPath(); err != nil {
		return err
	}
	for _, d := range []struct{ key, dir string }{{"cwd", rt.Cwd}, {"profile_dir", rt.ProfileDir}, {"profile_template", rt.ProfileTemplate}} {
		if d.dir == "" {
			continue
		}
		if fi, err := os.Stat(d.dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("runtime %s: runtime_options.%s: %s is not a directory", rt.Name, d.key, d.dir)
		}
	}
	return nil
}

// LookPath returns where the program of the command line is: found on
// PATH for a bare name, relative to Cwd for a relative path. Its error
// says how to get the program.
func (rt *Runtime) LookPath() (string, error) {
	prog := rt.Argv[0]
	if strings.ContainsRune(prog, filepath.Separator) || strings.ContainsRune(prog, '/') {
		p := prog
		if !filepath.IsAbs(p) && rt.Cwd != "" {
			p = filepath.Join(rt.Cwd, p)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() {
			return "", fmt.Errorf("runtime %s: %s: no such program", rt.Name, prog)
		}
		return p, nil
	}
	p, err := exec.LookPath(prog)
	if err != nil {
		msg := fmt.Sprintf("runtime %s: %s is not on PATH", rt.Name, prog)
		if b, _ := Lookup(rt.Name); b.Install != "" && prog == b.Binary {
			msg += "; install it (" + b.Install + ") or set runtime_options.binary"
		} else {
			msg += "; give its full path in runtime_options.command"
		}
		return "", errors.New(msg)
	}
	return p, nil
}

// validKind reports whether s can be a fixture key.
func validKind(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// argList reads a command line: a list of strings, or one string split
// into words as a POSIX shell would (quotes and backslashes), without
// running a shell.
func argList(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return splitWords(x)
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("element %d: want a string, got %s", i, method.Describe(e))
			}
			out[i] = s
		}
		return out, nil
	case []string:
		return slices.Clone(x), nil
	}
	return nil, fmt.Errorf("want a list of strings or a string, got %s", method.Describe(v))
}

// splitWords splits s into words as a POSIX shell does, without
// expanding anything: 'single' and "double" quotes, backslash escapes.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated \" quote")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// envTable reads runtime_options.env: names to strings (numbers and
// booleans are written as TOML would), sorted by name.
func envTable(v any) ([][2]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a table of variables, e.g. { OPENAI_BASE_URL = \"http://127.0.0.1:8000/v1\" }, got %s", method.Describe(v))
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([][2]string, 0, len(m))
	for _, k := range names {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("%q is not a variable name", k)
		}
		var s string
		switch x := m[k].(type) {
		case string:
			s = x
		case bool, int64, int, float64:
			s = fmt.Sprint(x)
		default:
			return nil, fmt.Errorf("%s: want a string, got %s", k, method.Describe(x))
		}
		if strings.ContainsRune(s, 0) {
			return nil, fmt.Errorf("%s: the value holds a NUL byte", k)
		}
		out = append(out, [2]string{k, s})
	}
	return out, nil
}

// timeout reads seconds (a number) or a duration ("90s", "5m").
func timeout(v any) (time.Duration, error) {
	var d time.Duration
	switch x := v.(type) {
	case int64:
		d = time.Duration(min(x, int64(maxTimeout/time.Second)+1)) * time.Second
	case int:
		d = time.Duration(min(int64(x), int64(maxTimeout/time.Second)+1)) * time.Second
	case float64:
		if math.IsNaN(x) || x > maxTimeout.Seconds() {
			d = maxTimeout + 1
		} else {
			d = time.Duration(x * float64(time.Second))
		}
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			return 0, fmt.Errorf("want seconds or a duration such as \"90s\", got %q", x)
		}
	default:
		return 0, fmt.Errorf("want seconds or a duration such as \"90s\", got %s", method.Describe(v))
	}
	if d <= 0 || d > maxTimeout {
		return 0, fmt.Errorf("want more than 0 and at most %v, got %v", maxTimeout, v)
	}
	return d, nil
}
