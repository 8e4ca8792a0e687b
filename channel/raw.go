package channel

import "github.com/pikit-go/pikit/method"

func init() {
	register(method.Info{
		Name:        "raw",
		Description: "the payload text as it is, with no carrier: for scenarios and benchmarks whose tool output already places the injection (a marker in a template), and for testing a model on the bare instruction in a tool result",
	}, func(options) (Channel, error) { return raw{}, nil })
}

// raw delivers the payload alone: the carrier data is dropped.
type raw struct{}

var (
	_ Channel    = raw{}
	_ Sampler    = raw{}
	_ FileWriter = raw{}
)

// Taint returns the payload.
func (raw) Taint(_, payload string) (string, error) { return payload, nil }

// Sample returns the text a raw payload stands in for: none, but the
// harness needs something to call clean data.
func (raw) Sample() string { return rawSample }

const rawSample = "(no carrier: the payload is delivered as it is)"

// TaintFile writes the payload alone to a text file.
func (raw) TaintFile(dir, _, payload string) (string, error) {
	return writeFile(dir, "payload.txt", payload)
}
