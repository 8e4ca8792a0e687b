package target

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/method"
)

func TestToolCallArgs(t *testing.T) {
	tests := []struct {
		name      string
		arguments string
		want      map[string]any
		wantErr   bool
	}{
		{name: "object", arguments: `{"to":"a@b.example","n":2,"ok":true}`, want: map[string]any{"to": "a@b.example", "n": 2.0, "ok": true}},
		{name: "nested object", arguments: `{"a":{"b":[1,"x"]}}`, want: map[string]any{"a": map[string]any{"b": []any{1.0, "x"}}}},
		{name: "empty object", arguments: `{}`, want: map[string]any{}},
		{name: "empty string", arguments: ``, want: map[string]any{}},
		{name: "whitespace only", arguments: " \n\t ", want: map[string]any{}},
		{name: "null", arguments: `null`, want: map[string]any{}},
		{name: "malformed", arguments: `{"to": "a@b.example"`, wantErr: true},
		{name: "not json", arguments: `to=a@b.example`, wantErr: true},
		{name: "array", arguments: `[{"to":"a"}]`, wantErr: true},
		{name: "string", arguments: `"hello"`, wantErr: true},
		{name: "number", arguments: `42`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ToolCall{ID: "c1", Name: "send_email", Arguments: tt.arguments}
			got, err := c.Args()
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Args(%q) = %v, want an error", tt.arguments, got)
				}
				if !strings.Contains(err.Error(), "send_email") {
					t.Errorf("error %q does not name the tool", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Args(%q): %v", tt.arguments, err)
			}
			if got == nil {
				t.Fatalf("Args(%q) returned a nil map", tt.arguments)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Args(%q) = %#v, want %#v", tt.arguments, got, tt.want)
			}
		})
	}
}

func TestParseSpec(t *testing.T) {
	tests := []struct {
		spec          string
		provider      string
		model         string
		wantErr       bool
		wantInMessage string
	}{
		{spec: "mock", provider: "mock", model: ""},
		{spec: "mock:echo", provider: "mock", model: "echo"},
		{spec: "  mock:echo  ", provider: "mock", model: "echo"},
		{spec: "mock:some:thing", provider: "mock", model: "some:thing"},
		{spec: "nosuch:x", wantErr: true, wantInMessage: `"nosuch"`},
		{spec: "nosuch", wantErr: true, wantInMessage: `"nosuch"`},
		{spec: "", wantErr: true},
		{spec: "MOCK", wantErr: true, wantInMessage: `"MOCK"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			provider, model, err := ParseSpec(tt.spec)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseSpec(%q) = %q, %q, want an error", tt.spec, provider, model)
				}
				if !errors.Is(err, method.ErrUnknown) {
					t.Errorf("ParseSpec(%q) error %v does not wrap method.ErrUnknown", tt.spec, err)
				}
				var ue *method.UnknownError
				if !errors.As(err, &ue) {
					t.Fatalf("ParseSpec(%q) error %T is not a *method.UnknownError", tt.spec, err)
				}
				if !reflect.DeepEqual(ue.Known, ProviderNames()) {
					t.Errorf("known providers = %v, want %v", ue.Known, ProviderNames())
				}
				msg := err.Error()
				for _, name := range ProviderNames() {
					if !strings.Contains(msg, name) {
						t.Errorf("error %q does not list provider %q", msg, name)
					}
				}
				if !strings.Contains(msg, "known:") {
					t.Errorf("error %q does not list the known providers", msg)
				}
				if tt.wantInMessage != "" && !strings.Contains(msg, tt.wantInMessage) {
					t.Errorf("error %q does not mention %s", msg, tt.wantInMessage)
				}
				if provider != "" || model != "" {
					t.Errorf("ParseSpec(%q) returned %q, %q with an error", tt.spec, provider, model)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSpec(%q): %v", tt.spec, err)
			}
			if provider != tt.provider || model != tt.model {
				t.Errorf("ParseSpec(%q) = %q, %q, want %q, %q", tt.spec, provider, model, tt.provider, tt.model)
			}
		})
	}
}

func TestProvidersIncludeMock(t *testing.T) {
	names := ProviderNames()
	found := false
	for i, n := range names {
		if n == "mock" {
			found = true
		}
		if i > 0 && names[i-1] >= n {
			t.Errorf("ProviderNames not sorted: %v", names)
		}
	}
	if !found {
		t.Fatalf("ProviderNames() = %v, want it to include mock", names)
	}
	for _, p := range Providers() {
		if p.Description == "" {
			t.Errorf("provider %s has no description", p.Name)
		}
	}
}

func TestRegisterPanics(t *testing.T) {
	open := func(string, Options) (Target, error) { return Echo{}, nil }
	tests := []struct {
		name string
		p    Provider
	}{
		{"duplicate", Provider{Name: "mock", Open: open}},
		{"no name", Provider{Open: open}},
		{"no open", Provider{Name: "pikit-test-no-open"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%+v) did not panic", tt.p)
				}
			}()
			Register(tt.p)
		})
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		spec    string
		opts    Options
		wantErr string // substring; "" means success
		unknown bool   // the error wraps method.ErrUnknown
	}{
		{spec: "mock"},
		{spec: "mock:echo"},
		{spec: "mock:bogus", wantErr: "bogus"},
		{spec: "mock", opts: Options{"base_url": "http://x"}, wantErr: "base_url"},
		{spec: "nosuch:x", wantErr: "nosuch", unknown: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			tg, err := Open(tt.spec, tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Open(%q): %v", tt.spec, err)
				}
				if _, ok := tg.(Echo); !ok {
					t.Errorf("Open(%q) = %T, want Echo", tt.spec, tg)
				}
				return
			}
			if err == nil {
				t.Fatalf("Open(%q, %v) = %T, want an error", tt.spec, tt.opts, tg)
			}
			if tg != nil {
				t.Errorf("Open(%q) returned a target with an error", tt.spec)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Open(%q) error %q does not mention %q", tt.spec, err, tt.wantErr)
			}
			if got := errors.Is(err, method.ErrUnknown); got != tt.unknown {
				t.Errorf("errors.Is(%v, ErrUnknown) = %v, want %v", err, got, tt.unknown)
			}
		})
	}
}

func TestUsageAdd(t *testing.T) {
	got := Usage{PromptTokens: 3, CompletionTokens: 4}.Add(Usage{PromptTokens: 10, CompletionTokens: 20})
	if want := (Usage{PromptTokens: 13, CompletionTokens: 24}); got != want {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
}
