// Package attack words an injected task: each attack turns the attacker's
// task into the text that is smuggled into a prompt (naive, escape,
// context_ignoring, fake_completion, combined, ...). Attacks register
// themselves by name from init functions; adding one is adding a file.
package attack

import "github.com/pikit-go/pikit/method"

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
