// Package channel hides a payload inside a realistic carrier for indirect
// injection: a web page, an email, a Markdown file, a code comment, invisible
// Unicode, an Agent Skill, and more. Channels are orthogonal to attacks: an
// attack words the payload, a channel hides it. Each channel registers by
// name from an init function, with clean sample data of its own.
package channel

import (
	"sort"
	"sync"

	"github.com/pikit-go/pikit/method"
)

// Channel hides a payload in clean data, returning the tainted artifact (the
// page, document or email itself, not a prompt).
type Channel interface {
	Taint(data, payload string) (string, error)
}

// Sampler is implemented by channels that have a natural clean carrier: the
// harness taints it when a config names no data_sample.
type Sampler interface {
	Sample() string
}

// FileWriter is implemented by channels that can write a real file of their
// carrier's type (carrier_mode = "file"). TaintFile writes the tainted file
// into dir and returns its path.
type FileWriter interface {
	TaintFile(dir, data, payload string) (path string, err error)
}

// FileReader is implemented by channels whose files a tool does not hand a
// model byte for byte: ReadFile returns what a document tool reads from a
// file the channel wrote (a PDF's metadata and extracted text, not its raw
// bytes). File mode delivers that in place of the file's content.
type FileReader interface {
	ReadFile(path string) (string, error)
}

// Registry holds every registered channel.
var Registry = method.NewRegistry[Channel]("channel")

// Register adds a channel; it panics on a duplicate name.
func Register(info method.Info, f method.Factory[Channel]) { Registry.Register(info, f) }

// New builds the named channel.
func New(name string, kwargs map[string]any, seed int64) (Channel, error) {
	return Registry.New(name, kwargs, seed)
}

// Names returns the registered channel names, sorted.
func Names() []string { return Registry.Names() }

var (
	samplesMu sync.RWMutex
	samples   = map[string]string{}
)

// RegisterSample adds a named clean sample (a config's data_sample picks
// one); it panics on a duplicate name.
func RegisterSample(name, text string) {
	samplesMu.Lock()
	defer samplesMu.Unlock()
	if _, dup := samples[name]; dup {
		panic("channel: sample " + name + " registered twice")
	}
	samples[name] = text
}

// LookupSample returns a named sample.
func LookupSample(name string) (string, bool) {
	samplesMu.RLock()
	defer samplesMu.RUnlock()
	s, ok := samples[name]
	return s, ok
}

// SampleNames returns the names of the registered samples, sorted.
func SampleNames() []string {
	samplesMu.RLock()
	defer samplesMu.RUnlock()
	names := make([]string, 0, len(samples))
	for n := range samples {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CheckSample returns an error wrapping method.ErrUnknown for an unknown
// sample name.
func CheckSample(name string) error {
	if _, ok := LookupSample(name); ok {
		return nil
	}
	return &method.UnknownError{Kind: "data_sample", Name: name, Known: SampleNames()}
}
