package attack

import "github.com/pikit-go/pikit/method"

func init() {
	Register(method.Info{
		Name:        "naive",
		Description: "Appends the task to the prompt as it is, with no wording around it.",
		Options: []method.Option{
			separatorOption(" "),
		},
	}, func(args method.Args) (Attack, error) {
		return naive{sep: args.String("separator")}, nil
	})
}

// naive appends the task after a separator.
type naive struct{ sep string }

var _ Attack = naive{}

// Inject returns prompt, the separator and task.
func (a naive) Inject(prompt, task string) string { return join(prompt, a.sep, task) }
