package attack

import "github.com/pikit-go/pikit/method"

// Fixed is the name of the attack that injects a given text verbatim: the
// winning injection of an adaptive search, rerun as a fixed case.
const Fixed = "fixed"

func init() {
	Register(method.Info{
		Name:        Fixed,
		Description: "Injects the exact text given in payload (an adaptive attack's winning injection, exported with pikit export-case); without it, the task as it is.",
		Options: []method.Option{
			{Name: "payload", Help: "the exact injected text; empty: the task as it is", Default: ""},
			{Name: "turns", Help: "direct injection: user turns said before the one carrying the payload, each answered before the next (a crescendo conversation); with turns, the payload is the last turn itself, not added to the user's request", Default: []string{}},
			separatorOption("\n\n"),
		},
	}, func(args method.Args) (Attack, error) {
		return fixed{payload: args.String("payload"), sep: args.String("separator"), turns: args.Strings("turns")}, nil
	})
}

// fixed injects a text chosen beforehand, whatever the task.
type fixed struct {
	payload, sep string
	turns        []string
}

// Turns returns the user turns a fixed attack says before the payload
// (none for any other attack).
func Turns(a Attack) []string {
	if f, ok := a.(fixed); ok {
		return f.turns
	}
	return nil
}

var _ Attack = fixed{}

// Inject returns prompt, the separator and the payload (or the task when
// no payload was given). A conversation's last turn (turns given) is the
// payload alone, as the attacker said it.
func (a fixed) Inject(prompt, task string) string {
	if a.payload != "" {
		task = a.payload
	}
	if len(a.turns) > 0 {
		return task
	}
	return join(prompt, a.sep, task)
}
