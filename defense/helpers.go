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
	size := 0
	for _, p := range parts {
		size += len(p) + 2
	}
	var b strings.Builder
	b.Grow(size)
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

// pythonTextNote ends the help of a free-text option whose default is our
// own wording.
const pythonTextNote = " The Python pikit's default text differs and is not reproduced here."

// pythonValueNote ends the help of an option whose default value is ours,
// not the Python pikit's.
const pythonValueNote = " The Python pikit's default differs; it is not reproduced here, and this one is kept."

// joinSentence appends a taskSentence (which starts with a space) to text,
// dropping that space when text is empty.
func joinSentence(text, sentence string) string {
	if text == "" {
		return strings.TrimSpace(sentence)
	}
	return text + sentence
}
