package method

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pikit-go/pikit/internal/suggest"
	"github.com/pikit-go/pikit/internal/textcut"
)

// Info describes a registered method: its key, a one-line description and
// the options it accepts.
type Info struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Options     []Option `json:"options,omitempty"`
	// Normalize, when set, rewrites options given under other names into
	// the method's own before they are checked (the Python pikit's names
	// of the same choices); it returns kwargs unchanged when there is
	// nothing to rewrite.
	Normalize func(kwargs map[string]any) (map[string]any, error) `json:"-"`
}

// Option describes one option of a method. Default fixes the option's type:
// string, int, float64, bool or []string.
type Option struct {
	Name    string   `json:"name"`
	Help    string   `json:"help"`
	Default any      `json:"default"`
	Choices []string `json:"choices,omitempty"` // allowed values of a string option
}

// Option looks up an option by name.
func (in Info) Option(name string) (Option, bool) {
	for _, o := range in.Options {
		if o.Name == name {
			return o, true
		}
	}
	return Option{}, false
}

// ErrUnknown is wrapped by every error about a name no registry knows.
var ErrUnknown = errors.New("unknown name")

// ErrOption is wrapped by every error about a bad method option.
var ErrOption = errors.New("bad option")

// UnknownError reports a name that is not registered, with the known names
// and the nearest ones.
type UnknownError struct {
	Kind  string // "attack", "defense", ...
	Name  string
	Known []string
}

func (e *UnknownError) Error() string {
	// A file may give any text as a name: quote only its start.
	name := textcut.Clip(e.Name, maxNameShown, "…")
	if len(e.Known) == 0 {
		return fmt.Sprintf("unknown %s %q", e.Kind, name)
	}
	return fmt.Sprintf("unknown %s %q%s; known: %s", e.Kind, name, suggest.Hint(e.Name, e.Known), strings.Join(e.Known, ", "))
}

// maxNameShown bounds the part of an unknown name an error quotes.
const maxNameShown = 80

// Is makes errors.Is(err, ErrUnknown) true.
func (e *UnknownError) Is(target error) bool { return target == ErrUnknown }

// OptionError reports an option a method does not take, or a bad value.
type OptionError struct {
	Kind, Method, Option string
	Problem              string   // what is wrong
	Valid                []string // the valid option names or values
}

func (e *OptionError) Error() string {
	msg := fmt.Sprintf("%s %s: option %q: %s", e.Kind, e.Method, e.Option, e.Problem)
	if len(e.Valid) > 0 {
		msg += "; valid: " + strings.Join(e.Valid, ", ")
	}
	return msg
}

// Is makes errors.Is(err, ErrOption) true.
func (e *OptionError) Is(target error) bool { return target == ErrOption }

// Args are the validated options a method is built with: every declared
// option is present, set by the config or defaulted. Seed is the cell's seed,
// for methods with randomness.
type Args struct {
	Seed   int64
	values map[string]any
	set    map[string]bool
}

// NewArgs builds Args from already-typed values (for tests and callers that
// build methods in code without a registry).
func NewArgs(seed int64, values map[string]any) Args {
	set := make(map[string]bool, len(values))
	for k := range values {
		set[k] = true
	}
	return Args{Seed: seed, values: values, set: set}
}

// String returns a string option.
func (a Args) String(name string) string { s, _ := a.values[name].(string); return s }

// Int returns an int option.
func (a Args) Int(name string) int { n, _ := a.values[name].(int); return n }

// Float returns a float option.
func (a Args) Float(name string) float64 { f, _ := a.values[name].(float64); return f }

// Bool returns a bool option.
func (a Args) Bool(name string) bool { b, _ := a.values[name].(bool); return b }

// Strings returns a list-of-strings option.
func (a Args) Strings(name string) []string { s, _ := a.values[name].([]string); return s }

// Set reports whether the config set the option (rather than its default).
func (a Args) Set(name string) bool { return a.set[name] }

// Factory builds a method from its validated options.
type Factory[T any] func(Args) (T, error)

type entry[T any] struct {
	info    Info
	factory Factory[T]
}

// Registry maps method names to their factories. It is safe for concurrent
// use; registration normally happens from init functions.
type Registry[T any] struct {
	kind    string
	mu      sync.RWMutex
	entries map[string]entry[T]
}

// NewRegistry returns an empty registry for methods of the given kind
// ("attack", "defense", ...), a word used in error messages.
func NewRegistry[T any](kind string) *Registry[T] {
	return &Registry[T]{kind: kind, entries: map[string]entry[T]{}}
}

// Kind returns the registry's kind word.
func (r *Registry[T]) Kind() string { return r.kind }

// Register adds a method. It panics on an empty or duplicate name, or an
// option whose default has an unsupported type: these are programming errors.
func (r *Registry[T]) Register(info Info, f Factory[T]) {
	if info.Name == "" || f == nil {
		panic(fmt.Sprintf("method: %s registered without a name or factory", r.kind))
	}
	for _, o := range info.Options {
		switch o.Default.(type) {
		case string, int, float64, bool, []string:
		default:
			panic(fmt.Sprintf("method: %s %s: option %s has default of unsupported type %T", r.kind, info.Name, o.Name, o.Default))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.entries[info.Name]; dup {
		panic(fmt.Sprintf("method: %s %q registered twice", r.kind, info.Name))
	}
	r.entries[info.Name] = entry[T]{info, f}
}

// Names returns the registered names, sorted.
func (r *Registry[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Infos returns the description of every registered method, sorted by name.
func (r *Registry[T]) Infos() []Info {
	names := r.Names()
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Info, len(names))
	for i, n := range names {
		out[i] = r.entries[n].info
	}
	return out
}

// Lookup returns a method's description.
func (r *Registry[T]) Lookup(name string) (Info, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	return e.info, ok
}

// Check returns an *UnknownError when name is not registered.
func (r *Registry[T]) Check(name string) error {
	if _, ok := r.Lookup(name); !ok {
		return &UnknownError{Kind: r.kind, Name: name, Known: r.Names()}
	}
	return nil
}

// Validate checks kwargs against the method's options, and builds the
// method once so that errors its factory finds (a value out of range, a bad
// pattern) surface before a run starts.
func (r *Registry[T]) Validate(name string, kwargs map[string]any) error {
	_, err := r.New(name, kwargs, 0)
	return err
}

// New builds the named method with the given options (nil for defaults) and
// seed.
func (r *Registry[T]) New(name string, kwargs map[string]any, seed int64) (T, error) {
	var zero T
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	if !ok {
		return zero, &UnknownError{Kind: r.kind, Name: name, Known: r.Names()}
	}
	if e.info.Normalize != nil {
		var err error
		if kwargs, err = e.info.Normalize(kwargs); err != nil {
			return zero, fmt.Errorf("%s %s: %w", r.kind, name, err)
		}
	}
	values, set, err := resolve(r.kind, e.info, kwargs)
	if err != nil {
		return zero, err
	}
	m, err := e.factory(Args{Seed: seed, values: values, set: set})
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", r.kind, name, err)
	}
	return m, nil
}

// resolve validates kwargs against info and fills in defaults.
func resolve(kind string, info Info, kwargs map[string]any) (values map[string]any, set map[string]bool, err error) {
	values = make(map[string]any, len(info.Options))
	set = make(map[string]bool, len(kwargs))
	for _, o := range info.Options {
		values[o.Name] = o.Default
	}
	keys := make([]string, 0, len(kwargs))
	for k := range kwargs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o, ok := info.Option(k)
		if !ok {
			valid := make([]string, len(info.Options))
			for i, o := range info.Options {
				valid[i] = o.Name
			}
			problem := "not an option of this method" + suggest.Hint(k, valid)
			if len(valid) == 0 {
				problem = "this method takes no options"
			}
			return nil, nil, &OptionError{Kind: kind, Method: info.Name, Option: k, Problem: problem, Valid: valid}
		}
		v, err := coerce(o, kwargs[k])
		if err != nil {
			return nil, nil, &OptionError{Kind: kind, Method: info.Name, Option: k, Problem: err.Error(), Valid: o.Choices}
		}
		values[k] = v
		set[k] = true
	}
	return values, set, nil
}

// coerce converts a decoded config value (TOML gives int64, float64, string,
// bool, []any) to the option's type.
func coerce(o Option, v any) (any, error) {
	switch o.Default.(type) {
	case string:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %s", Describe(v))
		}
		if len(o.Choices) > 0 {
			for _, c := range o.Choices {
				if c == s {
					return s, nil
				}
			}
			return nil, fmt.Errorf("%q is not one of the choices%s", s, suggest.Hint(s, o.Choices))
		}
		return s, nil
	case int:
		switch n := v.(type) {
		case int64:
			return int(n), nil
		case int:
			return n, nil
		case float64:
			if n == math.Trunc(n) {
				return int(n), nil
			}
		}
		return nil, fmt.Errorf("want an integer, got %s", Describe(v))
	case float64:
		switch n := v.(type) {
		case float64:
			return n, nil
		case int64:
			return float64(n), nil
		case int:
			return float64(n), nil
		}
		return nil, fmt.Errorf("want a number, got %s", Describe(v))
	case bool:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false, got %s", Describe(v))
		}
		return b, nil
	case []string:
		switch l := v.(type) {
		case string:
			return []string{l}, nil
		case []string:
			return l, nil
		case []any:
			out := make([]string, len(l))
			for i, e := range l {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("want a list of strings, element %d is %s", i, Describe(e))
				}
				out[i] = s
			}
			return out, nil
		}
		return nil, fmt.Errorf("want a list of strings, got %s", Describe(v))
	}
	return nil, fmt.Errorf("unsupported option type %T", o.Default)
}

// Describe names a decoded config value for an error message: "the
// string \"many\"", "the integer 3", "a list".
func Describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing"
	case string:
		return fmt.Sprintf("the string %q", x)
	case int64, int:
		return fmt.Sprintf("the integer %v", x)
	case float64:
		return fmt.Sprintf("the number %v", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

// FromStrings turns options given as text on a command line (KEY=VALUE,
// as `pikit import --set` takes them) into kwargs of the types info's
// options declare: an integer, a number, true or false (also yes/no, 1/0;
// a bare KEY is true), a comma-separated list. A value that does not read
// as its type is an *OptionError; a key that is not an option is passed
// on as text, for New to name with the valid ones. A key given twice
// keeps its last value.
func FromStrings(kind string, info Info, pairs []string) (map[string]any, error) {
	out := make(map[string]any, len(pairs))
	for _, kv := range pairs {
		k, v, hasValue := strings.Cut(kv, "=")
		o, ok := info.Option(k)
		if _, isBool := o.Default.(bool); k == "" || !hasValue && !(ok && isBool) {
			return nil, fmt.Errorf("%q: want KEY=VALUE", kv)
		}
		if !ok {
			out[k] = v
			continue
		}
		bad := func(want string) error {
			return &OptionError{Kind: kind, Method: info.Name, Option: k, Problem: fmt.Sprintf("want %s, got %q", want, v), Valid: o.Choices}
		}
		switch o.Default.(type) {
		case string:
			out[k] = v
		case int:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return nil, bad("a whole number")
			}
			out[k] = n
		case float64:
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, bad("a number")
			}
			out[k] = f
		case bool:
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true", "yes", "1":
				out[k] = true
			case "false", "no", "0":
				out[k] = false
			case "":
				if hasValue {
					return nil, bad("true or false")
				}
				out[k] = true
			default:
				return nil, bad("true or false")
			}
		case []string:
			var list []string
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					list = append(list, s)
				}
			}
			out[k] = list
		}
	}
	return out, nil
}
