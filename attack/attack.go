// Package attack words an injected task: each attack turns the attacker's
// task into the text that is smuggled into a prompt (naive, escape,
// context_ignoring, fake_completion, combined, ...). Attacks register
// themselves by name from init functions; adding one is adding a file.
package attack

import (
	"fmt"
	"unicode/utf8"

	"github.com/pikit-go/pikit/method"
)

// Attack embeds an attacker's task into a prompt.
type Attack interface {
	// Inject returns prompt with task smuggled in. prompt is the benign
	// text the target would otherwise receive ("" when only the worded
	// payload is wanted, as for indirect injection).
	Inject(prompt, task string) string
}

// Func adapts a function to the Attack interface.
type Func func(prompt, task string) string

// Inject calls f.
func (f Func) Inject(prompt, task string) string { return f(prompt, task) }

// Registry holds every registered attack.
var Registry = method.NewRegistry[Attack]("attack")

// Register adds an attack; it panics on a duplicate name.
func Register(info method.Info, f method.Factory[Attack]) { Registry.Register(info, f) }

// New builds the named attack with its options (nil for defaults); seed
// drives any randomness, so the same inputs give the same output.
func New(name string, kwargs map[string]any, seed int64) (Attack, error) {
	return Registry.New(name, kwargs, seed)
}

// Names returns the registered attack names, sorted.
func Names() []string { return Registry.Names() }

// join puts a separator between a non-empty prompt and the injected text.
func join(prompt, sep, injected string) string {
	if prompt == "" {
		return injected
	}
	return prompt + sep + injected
}

// separatorOption declares the usual "separator" option with its default.
func separatorOption(def string) method.Option {
	return method.Option{Name: "separator", Help: "text between the prompt and the injected text", Default: def}
}

// optionError is a factory's complaint about an option value the registry's
// type checks let through (a count out of range, an unknown list entry).
// The registry prefixes it with the attack's kind and name.
type optionError struct{ option, problem string }

func (e *optionError) Error() string { return fmt.Sprintf("option %q: %s", e.option, e.problem) }

// Is makes errors.Is(err, method.ErrOption) true.
func (e *optionError) Is(target error) bool { return target == method.ErrOption }

// badOption returns an error about the named option that wraps
// method.ErrOption.
func badOption(option, format string, args ...any) error {
	return &optionError{option, fmt.Sprintf(format, args...)}
}

// split cuts s into at most n pieces of nearly equal length, counted in
// runes so no piece ends inside a UTF-8 sequence. Joining the pieces gives
// s back. It returns fewer than n pieces only when s has fewer than n runes
// (and one empty piece for an empty s), so no piece is empty otherwise.
func split(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	n = max(1, min(n, runes))
	parts := make([]string, 0, n)
	size, extra := runes/n, runes%n
	start := 0
	for i := range n {
		want := size
		if i < extra {
			want++
		}
		end := start
		for range want {
			_, w := utf8.DecodeRuneInString(s[end:])
			end += w
		}
		parts = append(parts, s[start:end])
		start = end
	}
	return parts
}

// aliasOption declares theirs, the Python pikit's name for our option ours,
// with the same default.
func aliasOption(theirs, ours, help string, def any) method.Option {
	return method.Option{
		Name:    theirs,
		Help:    help + fmt.Sprintf(" (the Python pikit's name for %s; give one of the two)", ours),
		Default: def,
	}
}

// aliased returns the string option set under either of its two names,
// ours or theirs (the Python pikit's). Setting both is an error naming
// both, even when the values agree: the config says one thing twice.
func aliased(args method.Args, ours, theirs string) (string, error) {
	if args.Set(ours) && args.Set(theirs) {
		return "", badOption(theirs, "%q and %q name the same option; give only one of them", theirs, ours)
	}
	if args.Set(theirs) {
		return args.String(theirs), nil
	}
	return args.String(ours), nil
}
