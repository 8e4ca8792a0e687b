package agentrt

import (
	"errors"
	"reflect"
	"slices"
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
			if !reflect.DeepEqual(rt.Argv, []string{"python3", "agent.py", "--x"}) || rt.Timeout != DefaultTimeout || rt.Fixture != "" || rt.Env != nil {
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
			"timeout": int64(90), "profile_dir": "/tmp/p", "profile_template": "/etc/tpl", "message": "hi", "system": "Be brief.",
		}, "inbox", func(t *testing.T, rt *Runtime) {
			want := &Runtime{Name: "command", Argv: []string{"node", "agent.js"}, Cwd: "/srv", Env: [][2]string{{"A", "3"}, {"B", "x"}, {"C", "true"}},
				Timeout: 90 * time.Second, ProfileDir: "/tmp/p", ProfileTemplate: "/etc/tpl", Message: "hi", System: "Be brief.", Fixture: "inbox"}
			if !reflect.DeepEqual(rt, want) {
				t.Errorf("got  %+v\nwant %+v", rt, want)
			}
		}},
		// The Python pikit's command lines and state variables.
		{"openclaw defaults", "openclaw", nil, "", func(t *testing.T, rt *Runtime) {
			if want := []string{"openclaw", "agent", "--local", "--json", "--message", "{message}", "--session-key", "agent:main:{session}"}; !reflect.DeepEqual(rt.Argv, want) {
				t.Errorf("%q, want %q", rt.Argv, want)
			}
			if want := [][2]string{{"HOME", "{profile_dir}"}, {"OPENCLAW_STATE_DIR", "{profile_dir}"}}; !reflect.DeepEqual(rt.Env, want) || !rt.JSONOutput {
				t.Errorf("env %q", rt.Env)
			}
		}},
		{"openclaw with the Python pikit's options", "openclaw", map[string]any{"executable": "/opt/oc", "agent": "main", "model": "m1", "session_key": "k", "thinking": "low", "state_dir": "/p", "config_path": "/p/openclaw.json"}, "", func(t *testing.T, rt *Runtime) {
			if want := []string{"/opt/oc", "agent", "--local", "--json", "--message", "{message}", "--agent", "main", "--model", "m1", "--session-key", "k", "--thinking", "low"}; !reflect.DeepEqual(rt.Argv, want) {
				t.Errorf("%q, want %q", rt.Argv, want)
			}
			if want := [][2]string{{"OPENCLAW_STATE_DIR", "/p"}, {"OPENCLAW_CONFIG_PATH", "/p/openclaw.json"}}; !reflect.DeepEqual(rt.Env, want) {
				t.Errorf("env %q", rt.Env)
			}
		}},
		{"hermes defaults", "hermes", nil, "", func(t *testing.T, rt *Runtime) {
			if want := []string{"hermes", "--oneshot", "{message}", "--safe-mode"}; !reflect.DeepEqual(rt.Argv, want) {
				t.Errorf("%q, want %q", rt.Argv, want)
			}
			if want := [][2]string{{"HOME", "{profile_dir}"}, {"HERMES_HOME", "{profile_dir}"}}; !reflect.DeepEqual(rt.Env, want) || rt.JSONOutput {
				t.Errorf("env %q", rt.Env)
			}
		}},
		{"hermes with the Python pikit's options", "hermes", map[string]any{"safe_mode": false, "toolsets": []any{"pikit_fixture", "web"}, "model": "m", "provider": "p", "hermes_home": "/h"}, "", func(t *testing.T, rt *Runtime) {
			if want := []string{"hermes", "--oneshot", "{message}", "--model", "m", "--provider", "p", "--toolsets", "pikit_fixture,web"}; !reflect.DeepEqual(rt.Argv, want) {
				t.Errorf("%q, want %q", rt.Argv, want)
			}
			if want := [][2]string{{"HERMES_HOME", "/h"}}; !reflect.DeepEqual(rt.Env, want) {
				t.Errorf("env %q", rt.Env)
			}
		}},
		{"hermes with its binary and env overridden", "hermes", map[string]any{"binary": "/opt/hermes/bin/hermes", "env": map[string]any{"HOME": "/home/me"}, "timeout": "90s"}, "", func(t *testing.T, rt *Runtime) {
			if rt.Argv[0] != "/opt/hermes/bin/hermes" || rt.Argv[1] != "--oneshot" || rt.Timeout != 90*time.Second {
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
		{"command and binary", "openclaw", map[string]any{"command": "x", "binary": "y"}, "", "give command, or executable and args, not both"},
		{"another runtime's option", "hermes", map[string]any{"state_dir": "/p"}, "", "runtime_options.state_dir: unknown option for runtime hermes"},
		{"model not a string", "openclaw", map[string]any{"model": int64(3)}, "", "runtime_options.model: want a non-empty string"},
		{"safe_mode not a bool", "hermes", map[string]any{"safe_mode": "no"}, "", "runtime_options.safe_mode: want true or false"},
		{"empty toolsets", "hermes", map[string]any{"toolsets": []any{}}, "", "runtime_options.toolsets: empty"},
		{"a fixture the plugins lack", "openclaw", nil, "calendar", `fixture: unknown fixture "calendar"; the openclaw fixture plugin's: document, email, rag, skill, webpage`},
		{"command not strings", "command", map[string]any{"command": []any{"a", int64(1)}}, "", "runtime_options.command: element 1: want a string"},
		{"unterminated quote", "command", map[string]any{"command": `python3 "agent.py`}, "", `unterminated " quote`},
		{"unknown option", "command", map[string]any{"command": "a", "timout": int64(3)}, "", `runtime_options.timout: unknown option for runtime command (did you mean timeout?)`},
		{"binary not a string", "hermes", map[string]any{"binary": int64(3)}, "", "runtime_options.binary: want a non-empty string"},
		{"env not a table", "command", map[string]any{"command": "a", "env": "A=1"}, "", "runtime_options.env: want a table"},
		{"env bad name", "command", map[string]any{"command": "a", "env": map[string]any{"A=B": "1"}}, "", `"A=B" is not a variable name`},
		{"env bad value", "command", map[string]any{"command": "a", "env": map[string]any{"A": []any{}}}, "", "A: want a string"},
		{"zero timeout", "command", map[string]any{"command": "a", "timeout": int64(0)}, "", "runtime_options.timeout: want more than 0"},
		{"huge timeout", "command", map[string]any{"command": "a", "timeout": int64(1 << 62)}, "", "at most 24h0m0s"},
		{"bad duration", "command", map[string]any{"command": "a", "timeout": "soon"}, "", `want seconds or a duration such as "90s", got "soon"`},
		{"bad fixture", "command", map[string]any{"command": "a"}, "in box", `fixture: "in box" is not a fixture key`},
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
		channel, override string
		want              Mapping
	}{
		{"email_headers", "", Mapping{"email_headers", "email", Native}},
		{"webpage", "", Mapping{"webpage", "webpage", Native}},
		{"structured_data", "", Mapping{"structured_data", "rag", Native}},
		{"skills", "", Mapping{"skills", "skill", Native}},
		{"document", "", Mapping{"document", "document", Native}},
		{"calendar_event", "", Mapping{"calendar_event", "email", Fallback}},
		{"code_comment", "", Mapping{"code_comment", "document", Fallback}},
		{"translation", "", Mapping{"translation", "webpage", Fallback}},
		{"", "", Mapping{"", "document", Fallback}},
		{"raw", "", Mapping{"raw", "document", Fallback}},
		// The config's fixture key sends every channel there.
		{"webpage", "email", Mapping{"webpage", "email", Fallback}},
		{"email_headers", "email", Mapping{"email_headers", "email", Native}},
	} {
		if got := mapChannel(tc.channel, tc.override); got != tc.want {
			t.Errorf("mapChannel(%q, %q) = %+v, want %+v", tc.channel, tc.override, got, tc.want)
		}
	}
}

// Every channel the Python pikit has is in the table (pikit's own go to
// the default fixture, as Python's would).
func TestEveryChannelHasAPlace(t *testing.T) {
	python := []string{"webpage", "translation", "unicode_hidden", "email_headers", "chat_message", "calendar_event", "transaction_record",
		"document", "markdown", "code_comment", "pdf_metadata", "log_file", "config_file", "spreadsheet", "structured_data", "skills"}
	for _, name := range python {
		if _, ok := channelFixture[name]; !ok {
			t.Errorf("channel %s is not in the table", name)
		}
		if !slices.Contains(channel.Names(), name) {
			t.Errorf("channel %s is not one of pikit's", name)
		}
	}
	for _, f := range fixtures {
		if _, ok := channelFixture[nativeChannel[f.Key]]; !ok {
			t.Errorf("fixture %s models channel %q, which is not in the table", f.Key, nativeChannel[f.Key])
		}
	}
}
