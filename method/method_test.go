package method

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

type thing struct{ args Args }

func newRegistry() *Registry[thing] {
	r := NewRegistry[thing]("widget")
	r.Register(Info{Name: "plain", Description: "no options"}, func(a Args) (thing, error) { return thing{a}, nil })
	r.Register(Info{Name: "full", Description: "every option type", Options: []Option{
		{Name: "sep", Help: "separator", Default: " "},
		{Name: "mode", Help: "mode", Default: "a", Choices: []string{"a", "b"}},
		{Name: "n", Help: "count", Default: 2},
		{Name: "ratio", Help: "ratio", Default: 0.5},
		{Name: "on", Help: "switch", Default: false},
		{Name: "list", Help: "names", Default: []string{"x"}},
	}}, func(a Args) (thing, error) {
		if a.Int("n") < 0 {
			return thing{}, errors.New("n must not be negative")
		}
		return thing{a}, nil
	})
	return r
}

func TestRegistryNamesAndLookup(t *testing.T) {
	r := newRegistry()
	if got := r.Names(); !reflect.DeepEqual(got, []string{"full", "plain"}) {
		t.Errorf("Names() = %v", got)
	}
	if _, ok := r.Lookup("full"); !ok {
		t.Error("Lookup(full) failed")
	}
	err := r.Check("ful")
	var ue *UnknownError
	if !errors.Is(err, ErrUnknown) || !errors.As(err, &ue) || !strings.Contains(err.Error(), "did you mean full") || !strings.Contains(err.Error(), "known: full, plain") {
		t.Errorf("Check(ful) = %v", err)
	}
}

func TestRegisterPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"duplicate": func() {
			r := newRegistry()
			r.Register(Info{Name: "plain"}, func(Args) (thing, error) { return thing{}, nil })
		},
		"no name": func() { newRegistry().Register(Info{}, func(Args) (thing, error) { return thing{}, nil }) },
		"bad default": func() {
			newRegistry().Register(Info{Name: "x", Options: []Option{{Name: "o", Default: struct{}{}}}}, func(Args) (thing, error) { return thing{}, nil })
		},
		"no factory": func() { newRegistry().Register(Info{Name: "y"}, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

func TestNewDefaultsAndCoercion(t *testing.T) {
	r := newRegistry()
	th, err := r.New("full", nil, 9)
	if err != nil {
		t.Fatal(err)
	}
	a := th.args
	if a.String("sep") != " " || a.String("mode") != "a" || a.Int("n") != 2 || a.Float("ratio") != 0.5 || a.Bool("on") || !reflect.DeepEqual(a.Strings("list"), []string{"x"}) || a.Seed != 9 || a.Set("n") {
		t.Errorf("defaults: %+v", a)
	}
	// TOML hands over int64, float64 and []any.
	th, err = r.New("full", map[string]any{"n": int64(5), "ratio": int64(1), "list": []any{"p", "q"}, "mode": "b", "on": true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	a = th.args
	if a.Int("n") != 5 || a.Float("ratio") != 1 || !reflect.DeepEqual(a.Strings("list"), []string{"p", "q"}) || a.String("mode") != "b" || !a.Bool("on") || !a.Set("n") {
		t.Errorf("coerced: %+v", a)
	}
	th, err = r.New("full", map[string]any{"list": "solo", "n": 3.0}, 0)
	if err != nil || !reflect.DeepEqual(th.args.Strings("list"), []string{"solo"}) || th.args.Int("n") != 3 {
		t.Errorf("one string for a list, integral float for an int: %v %+v", err, th.args)
	}
}

func TestOptionErrors(t *testing.T) {
	r := newRegistry()
	tests := []struct {
		name   string
		method string
		kwargs map[string]any
		want   []string
	}{
		{"unknown option", "full", map[string]any{"sepp": "-"}, []string{`option "sepp"`, "did you mean sep", "valid: sep, mode, n, ratio, on, list"}},
		{"no options", "plain", map[string]any{"x": 1}, []string{"takes no options"}},
		{"bad choice", "full", map[string]any{"mode": "c"}, []string{`"c" is not one of the choices`, "valid: a, b"}},
		{"wrong type", "full", map[string]any{"n": "two"}, []string{"want an integer", `"two"`}},
		{"fraction for int", "full", map[string]any{"n": 2.5}, []string{"want an integer"}},
		{"bool", "full", map[string]any{"on": "yes"}, []string{"want true or false"}},
		{"list element", "full", map[string]any{"list": []any{"a", int64(1)}}, []string{"element 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Validate(tt.method, tt.kwargs)
			if !errors.Is(err, ErrOption) {
				t.Fatalf("want ErrOption, got %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
	if err := r.Validate("full", map[string]any{"n": int64(-1)}); err == nil || !strings.Contains(err.Error(), "widget full: n must not be negative") {
		t.Errorf("factory errors should surface in Validate: %v", err)
	}
}
