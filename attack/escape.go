package attack

import "github.com/pikit-go/pikit/method"

// defaultEscape is the run of line breaks the escape attack puts before the
// task, so it reads as a fresh block of text.
const defaultEscape = "\n\n\n"

func init() {
	Register(method.Info{
		Name:        "escape",
		Description: "Separates the task from the prompt with escape characters (line breaks by default).",
		Options: []method.Option{
			{Name: "escape", Help: "characters between the prompt and the task", Default: defaultEscape},
		},
	}, func(args method.Args) (Attack, error) {
		return escape{esc: args.String("escape")}, nil
	})
}

// escape puts escape characters between the prompt and the task.
type escape struct{ esc string }

var _ Attack = escape{}

// Inject returns prompt, the escape characters and task.
func (a escape) Inject(prompt, task string) string { return join(prompt, a.esc, task) }
