package agentrt

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/method"
)

func TestNewRuntime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runtime string
		opts    map[string]any
		fixture string
		check   func(t *testing.T, rt *Runtime)
	}{
		{"command as a list", "command", map[string]any{"command": []any{"python3", "agent.py", "--x"}}, "", func(t *testing.T, rt *Runtime) {
			if !reflect.DeepEqual(rt.Argv, []string{"python3", "agent.py", "--x"}) || rt.Timeout != DefaultTimeout || rt.Fixture != DefaultFixture || rt.Env != nil {
				t.Errorf("%+v", rt)
			}
		}},
		{"command as a string", "command", map[string]any{"command": `python3 "my agent.py" --msg '{message}'`}, "", func(t *testing.T, rt *Runtime) {
			if !reflect.DeepEqual(rt.Argv, []string{"python3", "my agent.py", "--msg", "{message}"}) {
				t.Errorf("%q", rt.Argv)
			}
		}},
		{"every option", "command", map[string]any{
			"binary": "node", "args": []any{"agent.js"}, "cwd": "/srv", "env": map[string]any{"B": "x", "A": int64(3), "C": true},
			"timeout": int64(90), "profile_dir": "/tmp/p", "profile_template": "/etc/tpl", "message": "hi", "fixtures": []any{"email", "web"},
		}, "email", func(t *testing.T, rt *Runtime) {
			want := &Runtime{Name: "command", Argv: []string{"node", "agent.js"}, Cwd: "/srv", Env: [][2]string{{"A", "3"}, {"B", "x"}, {"C", "true"}},
				Timeout: 90 * time.Second, ProfileDir: "/tmp/p", ProfileTemplate: "/etc/tpl", Message: "hi", Fixture: "email", Fixtures: []string{"email", "web"}}
			if !reflect.DeepEqual(rt, want) {
				t.Errorf("got  %+v\nwant %+v", rt, want)
			}
		}},
		{"openclaw defaults", "openclaw", nil, "", func(t *testing.T, rt *Runtime) {
			if rt.Argv[0] != "openclaw" || !strings.Contains(strings.Join(rt.Argv, " "), "agent --local --session-id {session} --message {message}") {
				t.Errorf("%q", rt.Argv)
			}
			if len(rt.Env) != 3 || rt.Env[0] != [2]string{"HOME", "{profile_dir}"} {
				t.Errorf("env %q", rt.Env)
			}
		}},
		{"hermes with its binary and env overridden", "hermes", map[string]any{"binary": "/opt/hermes/bin/hermes", "env": map[string]any{"HOME": "/home/me"}, "timeout": "90s"}, "", func(t *testing.T, rt *Runtime) {
			if rt.Argv[0] != "/opt/hermes/bin/hermes" || rt.Argv[1] != "chat" || rt.Timeout != 90*time.Second {
				t.Errorf("%+v", rt)
			}
			if last := rt.Env[len(rt.Env)-1]; last != [2]string{"HOME", "/home/me"} {
				t.Errorf("the user's env must come last (it wins): %q", rt.Env)
			}
		}},
		{"hermes args replaced", "hermes", map[string]any{"args": "chat --oneshot -q {message}"}, "", func(t *testing.T, rt *Runtime) {
			if !reflect.DeepEqual(rt.Argv, []string{"hermes", "chat", "--oneshot", "-q", "{message}"}) {
				t.Errorf("%q", rt.Argv)
			}
		}},
		{"fractional timeout", "command", map[string]any{"command": "a", "timeout": 0.5}, "", func(t *testing.T, rt *Runtime) {
			if rt.Timeout != 500*time.Millisecond {
				t.Errorf("%v", rt.Timeout)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := New(tc.runtime, tc.opts, tc.fixture)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, rt)
		})
	}
}

func TestNewRuntimeErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runtime string
		opts    map[string]any
		fixture string
		want    string
	}{
		{"unknown runtime", "openclow", nil, "", `unknown runtime "openclow" (did you mean openclaw?); known: command, hermes, openclaw`},
		{"command needs a command", "command", nil, "", `runtime_options.command: required by runtime "command"`},
		{"empty command", "command", map[string]any{"command": []any{}}, "", "runtime_options.command: empty"},
		{"command and binary", "openclaw", map[string]any{"command": "x", "binary": "y"}, "", "give command, or binary and args, not both"},
		{"command not strings", "command", map[string]any{"command": []any{"a", int64(1)}}, "", "runtime_options.command: element 1: want a string"},
		{"unterminated quote", "command", map[string]any{"command": `python3 "agent.py`}, "", `unterminated " quote`},
		{"unknown option", "command", map[string]any{"command": "a", "timout": int64(3)}, "", `runtime_options.timout: unknown option (did you mean timeout?)`},
		{"binary not a string", "hermes", map[string]any{"binary": int64(3)}, "", "runtime_options.binary: want a non-empty string"},
		{"env not a table", "command", map[string]any{"command": "a", "env": "A=1"}, "", "runtime_options.env: want a table"},
		{"env bad name", "command", map[string]any{"command": "a", "env": map[string]any{"A=B": "1"}}, "", `"A=B" is not a variable name`},
		{"env bad value", "command", map[string]any{"command": "a", "env": map[string]any{"A": []any{}}}, "", "A: want a string"},
		{"zero timeout", "command", map[string]any{"command": "a", "timeout": int64(0)}, "", "runtime_options.timeout: want more than 0"},
		{"huge timeout", "command", map[string]any{"command": "a", "timeout": int64(1 << 62)}, "", "at most 24h0m0s"},
		{"bad duration", "command", map[string]any{"command": "a", "timeout": "soon"}, "", `want seconds or a duration such as "90s", got "soon"`},
		{"bad fixture", "command", map[string]any{"command": "a"}, "in box", `fixture: "in box" is not a fixture key`},
		{"fixture not read", "command", map[string]any{"command": "a", "fixtures": []any{"email"}}, "web", `the default fixture "web" is not among runtime_options.fixtures`},
		{"default fixture not read", "command", map[string]any{"command": "a", "fixtures": []any{"email"}}, "", `the default fixture "document" is not among`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.runtime, tc.opts, tc.fixture)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := New("nope", nil, ""); !errors.Is(err, method.ErrUnknown) {
		t.Errorf("an unknown runtime must wrap method.ErrUnknown: %v", err)
	}
}

func TestFromConfigErrorsNameTheLine(t *testing.T) {
	cfg, err := matrix.Parse("exp.toml", []byte(`[matrix]
attacks = ["naive"]
runtime = "command"
runtime_options = { command = ["a"], timeout = -1 }
fixture = "bad kind"
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = FromConfig(&cfg)
	if !errors.Is(err, matrix.ErrConfig) {
		t.Fatalf("%v is not a config error", err)
	}
	for _, want := range []string{"exp.toml:4: runtime_options.timeout: want more than 0", `exp.toml:5: fixture: "bad kind"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	cfg.Runtime, cfg.Fixture = "hermess", ""
	if _, err := FromConfig(&cfg); err == nil || !strings.Contains(err.Error(), `exp.toml:3: runtime: unknown runtime "hermess" (did you mean hermes?)`) {
		t.Errorf("error %v", err)
	}
}

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		"":                        nil,
		"  a  b\tc\n":             {"a", "b", "c"},
		`a "b c" 'd e'`:           {"a", "b c", "d e"},
		`x"y"'z'`:                 {"xyz"},
		`"a\"b" 'a\b' a\ b`:       {`a"b`, `a\b`, "a b"},
		`"" ''`:                   {"", ""},
		`echo $HOME "$(rm -rf)";`: {"echo", "$HOME", "$(rm -rf);"},
	} {
		got, err := splitWords(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestMapChannel(t *testing.T) {
	for _, tc := range []struct {
		channel string
		reads   []string
		want    Mapping
	}{
		{"email_headers", nil, Mapping{"email_headers", "email", Native}},
		{"webpage", nil, Mapping{"webpage", "web", Native}},
		{"", nil, Mapping{"", "document", Fallback}},
		{"unicode_hidden", nil, Mapping{"unicode_hidden", "document", Fallback}},
		{"webpage", []string{"email", "document"}, Mapping{"webpage", "document", Fallback}},
	} {
		if got := mapChannel(tc.channel, DefaultFixture, tc.reads); got != tc.want {
			t.Errorf("mapChannel(%q, %v) = %+v, want %+v", tc.channel, tc.reads, got, tc.want)
		}
	}
}

// Every channel pikit has is mapped or falls back on purpose.
func TestEveryChannelHasAPlace(t *testing.T) {
	fallback := map[string]bool{"unicode_hidden": true, "raw": true}
	for _, name := range channel.Names() {
		if _, ok := nativeFixture[name]; !ok && !fallback[name] {
			t.Errorf("channel %s has no native fixture and is not listed as falling back", name)
		}
	}
}
