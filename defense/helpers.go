package defense

import (
	"fmt"
	"strings"

	"github.com/pikit-go/pikit/method"
)

// optionError reports a bad option value that a factory found after the
// registry's type checks. It wraps method.ErrOption; the registry prefixes
// the method's kind and name.
type optionError struct {
	option  string
	problem string
	valid   []string
}

func (e *optionError) Error() string {
	msg := fmt.Sprintf("option %q: %s", e.option, e.problem)
	if len(e.valid) > 0 {
		msg += "; valid: " + strings.Join(e.valid, ", ")
	}
	return msg
}

// Is makes errors.Is(err, method.ErrOption) true.
func (e *optionError) Is(target error) bool { return target == method.ErrOption }

// badOption returns an *optionError with a formatted problem.
func badOption(option, format string, args ...any) error {
	return &optionError{option: option, problem: fmt.Sprintf(format, args...)}
}

// taskSentence returns " <lead> <instruction>" for a known instruction, and
// "" when the instruction is empty, so an unknown task is never restated.
func taskSentence(lead, instruction string) string {
	instruction = strings.TrimSpace(instruction)
	if instruction == "" {
		return ""
	}
	return " " + lead + " " + instruction
}

// task returns the trusted instruction without surrounding space; "" when
// there is none.
func task(instruction string) string { return strings.TrimSpace(instruction) }

// paragraphs joins the non-empty parts with blank lines.
func paragraphs(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p)
	}
	return b.String()
}
