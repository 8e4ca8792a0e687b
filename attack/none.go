package attack

import "github.com/pikit-go/pikit/method"

// None is the name of the attack that injects nothing: its cells are the
// benign baseline against which utility under attack is measured. "*" in
// a config's attacks does not include it.
const None = "none"

func init() {
	Register(method.Info{
		Name:        None,
		Description: "Injects nothing: the benign baseline, for measuring utility without an attack.",
	}, func(method.Args) (Attack, error) { return noAttack{}, nil })
}

type noAttack struct{}

var _ Attack = noAttack{}

// Inject returns prompt unchanged.
func (noAttack) Inject(prompt, _ string) string { return prompt }

// AttackNames returns the names "*" expands to: every attack that words a
// task once, so every one but None, Fixed (which needs its payload) and
// the adaptive search (which must be asked for by name: it sends many
// requests per cell).
func AttackNames() []string {
	var out []string
	for _, n := range Names() {
		if n != None && n != Fixed && n != AdaptiveName {
			out = append(out, n)
		}
	}
	return out
}
