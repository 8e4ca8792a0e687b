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
			aliasOption("fake_response", "answer", "the fake answer to the original task", defaultFakeAnswer),
			aliasOption("ignore_text", "phrase", "the sentence telling the model to disregard its earlier instructions", defaultIgnorePhrase),
			{Name: "follow_up", Help: "text between the phrase and the task, introducing the task as the next request (empty: none)", Default: ""},
		},
	}, func(args method.Args) (Attack, error) {
		answer, err := aliased(args, "answer", "fake_response")
		if err != nil {
			return nil, err
		}
		phrase, err := aliased(args, "phrase", "ignore_text")
		if err != nil {
			return nil, err
		}
		return combined{answer: answer, esc: args.String("escape"), phrase: phrase, followUp: args.String("follow_up")}, nil
	})
}

// combined chains fake_completion, escape and context_ignoring.
type combined struct{ answer, esc, phrase, followUp string }

var _ Attack = combined{}

// Inject returns prompt, the fake answer, the escape characters, the
// phrase, the follow-up and task.
func (a combined) Inject(prompt, task string) string {
	return join(prompt, "\n", a.answer+a.esc+join(a.phrase, " ", join(a.followUp, " ", task)))
}
