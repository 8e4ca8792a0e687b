package attack

import "github.com/pikit-go/pikit/method"

func init() {
	Register(method.Info{
		Name:        "combined",
		Description: "Chains a fake completion, escape characters and a disregard-the-above phrase before the task.",
		Options: []method.Option{
			{Name: "answer", Help: "the fake answer to the original task", Default: defaultFakeAnswer},
			{Name: "escape", Help: "characters between the fake answer and the phrase", Default: defaultEscape},
			{Name: "phrase", Help: "the sentence telling the model to disregard its earlier instructions", Default: defaultIgnorePhrase},
		},
	}, func(args method.Args) (Attack, error) {
		return combined{answer: args.String("answer"), esc: args.String("escape"), phrase: args.String("phrase")}, nil
	})
}

// combined chains fake_completion, escape and context_ignoring.
type combined struct{ answer, esc, phrase string }

var _ Attack = combined{}

// Inject returns prompt, the fake answer, the escape characters, the phrase
// and task.
func (a combined) Inject(prompt, task string) string {
	return join(prompt, "\n", a.answer+a.esc+join(a.phrase, " ", task))
}
