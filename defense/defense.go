// Package defense hardens prompts against injection and detects injected
// text. A Defense rewrites a prompt (delimiters, sandwich, spotlighting, ...);
// a Detector flags suspicious text so the harness can block it before the
// model sees it. Both register by name from init functions.
package defense

import (
	"fmt"
	"maps"
	"sort"

	"github.com/pikit-go/pikit/method"
)

// Defense is a prevention-style transform of the text a model will read.
type Defense interface {
	// Apply returns a hardened version of prompt, the (possibly poisoned)
	// text. instruction is the trusted task the text serves, when the
	// caller can separate it ("" otherwise); defenses that restate the
	// task use it.
	Apply(prompt, instruction string) string
}

// Func adapts a function to the Defense interface.
type Func func(prompt, instruction string) string

// Apply calls f.
func (f Func) Apply(prompt, instruction string) string { return f(prompt, instruction) }

// Detection is a detector's judgement of one text.
type Detection struct {
	Flagged bool    `json:"flagged"`
	Score   float64 `json:"score"` // 0 (benign) to 1 (certainly injected)
	Reason  string  `json:"reason,omitempty"`
}

// Detector flags text that looks like an injection.
type Detector interface {
	Detect(text string) Detection
}

// Registry holds the prevention defenses; Detectors holds the detectors.
// Both share one name space: a config's defenses list may name either.
var (
	Registry  = method.NewRegistry[Defense]("defense")
	Detectors = method.NewRegistry[Detector]("detector")
)

// Register adds a defense; it panics on a duplicate name.
func Register(info method.Info, f method.Factory[Defense]) { Registry.Register(info, f) }

// RegisterDetector adds a detector; it panics on a duplicate name.
func RegisterDetector(info method.Info, f method.Factory[Detector]) { Detectors.Register(info, f) }

// New builds the named defense.
func New(name string, kwargs map[string]any, seed int64) (Defense, error) {
	kwargs, err := textForms(name, kwargs)
	if err != nil {
		return nil, err
	}
	return Registry.New(name, kwargs, seed)
}

// textFormOptions lists, per defense, options that take a number or free
// text under one name, as the Python pikit's configs use them: the
// registry types each option once, so the text goes to an option of its
// own (named here), and textForms moves a string there.
var textFormOptions = map[string]map[string]string{
	"few_shot_warning": {"examples": "examples_text"},
}

// textForms returns kwargs with each string given to a number-or-text
// option moved to its text option. Giving both is an error naming both.
// kwargs itself is not changed.
func textForms(name string, kwargs map[string]any) (map[string]any, error) {
	forms := textFormOptions[name]
	var out map[string]any
	for option, text := range forms {
		s, ok := kwargs[option].(string)
		if !ok {
			continue
		}
		if _, both := kwargs[text]; both {
			return nil, &method.OptionError{Kind: "defense", Method: name, Option: option,
				Problem: fmt.Sprintf("text given both as %q and as %q, which name the same option; give only one of them", option, text)}
		}
		if out == nil {
			out = maps.Clone(kwargs)
		}
		delete(out, option)
		out[text] = s
	}
	if out == nil {
		return kwargs, nil
	}
	return out, nil
}

// NewDetector builds the named detector.
func NewDetector(name string, kwargs map[string]any, seed int64) (Detector, error) {
	return Detectors.New(name, kwargs, seed)
}

// Names returns the prevention defense names, sorted.
func Names() []string { return Registry.Names() }

// IsDetector reports whether name is a registered detector.
func IsDetector(name string) bool { _, ok := Detectors.Lookup(name); return ok }

// AllNames returns defense and detector names together, sorted: every name
// a config's defenses list accepts.
func AllNames() []string {
	names := append(Registry.Names(), Detectors.Names()...)
	sort.Strings(names)
	return names
}

// Check returns an error wrapping method.ErrUnknown when name is neither a
// defense nor a detector.
func Check(name string) error {
	if _, ok := Registry.Lookup(name); ok {
		return nil
	}
	if IsDetector(name) {
		return nil
	}
	return &method.UnknownError{Kind: "defense", Name: name, Known: AllNames()}
}

// Validate checks a defense's or detector's options.
func Validate(name string, kwargs map[string]any) error {
	if IsDetector(name) {
		return Detectors.Validate(name, kwargs)
	}
	if err := Check(name); err != nil {
		return err
	}
	kwargs, err := textForms(name, kwargs)
	if err != nil {
		return err
	}
	return Registry.Validate(name, kwargs)
}
