package defense

import "github.com/pikit-go/pikit/method"

func init() {
	Register(method.Info{
		Name:        "none",
		Description: "No defense: the prompt passes through unchanged (the baseline).",
	}, func(method.Args) (Defense, error) {
		return Func(func(prompt, _ string) string { return prompt }), nil
	})
}
