// Package craft builds attack content: the attacker's task is worded by an
// attack, then either delivered as the user message (direct injection) or
// hidden in a carrier by a channel (indirect injection), as text or as a
// real file.
package craft

import (
	"fmt"
	"os"
	"strings"

	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/channel"
)

// Delivery modes.
const (
	Direct   = "direct"
	Indirect = "indirect"
)

// Options choose how a task is crafted.
type Options struct {
	Attack        string         // attack name; "" means naive
	AttackKwargs  map[string]any // attack options
	Channel       string         // channel name; "" means direct injection
	ChannelKwargs map[string]any // channel options
	// Data is the clean carrier to taint; "" means the channel's own
	// sample.
	Data string
	// Instruction is the benign user request a direct payload is appended
	// to ("" for the payload alone).
	Instruction string
	// PayloadMarker, when set and in Instruction, is where in it a direct
	// payload goes instead: the first occurrence is replaced by the
	// attack's wording of the task alone (Crafted.Payload; nothing for the
	// benign baseline).
	PayloadMarker string
	// CarrierMode is "text" (default) or "file": file mode writes a real
	// file of the carrier's type into Dir and delivers what a tool reading
	// it would return: its content, or for a document such as a PDF its
	// extracted text (channel.FileReader).
	CarrierMode string
	Dir         string
	Seed        int64 // drives any randomness of the methods

	// AttackMethod and ChannelMethod, when set, are used instead of
	// building the attack and the channel from their names, options and
	// seed: a caller crafting many cells builds each method once and
	// shares it. They must be what those names and options build. Attack
	// and Channel still choose the delivery (none, direct or indirect).
	AttackMethod  attack.Attack
	ChannelMethod channel.Channel
}

// Crafted is what Craft built.
type Crafted struct {
	Mode     string `json:"mode"`           // Direct or Indirect
	Payload  string `json:"payload"`        // the worded task (the attack's output)
	Delivery string `json:"delivery"`       // the user message, or the tainted carrier
	Path     string `json:"path,omitempty"` // file mode: the tainted file (Delivery is what a tool reads from it)
}

// Craft composes task → attack → channel → delivery.
func Craft(task string, o Options) (Crafted, error) {
	name := o.Attack
	if name == "" {
		name = "naive"
	}
	var err error
	atk := o.AttackMethod
	if atk == nil {
		if atk, err = attack.New(name, o.AttackKwargs, o.Seed); err != nil {
			return Crafted{}, err
		}
	}
	if name == attack.None {
		// The benign baseline: no payload, the clean carrier.
		if o.Channel == "" {
			return Crafted{Mode: Direct, Delivery: o.marked("")}, nil
		}
		return Crafted{Mode: Indirect}, nil
	}
	payload := atk.Inject("", task)
	if o.Channel == "" {
		if o.hasMarker() {
			return Crafted{Mode: Direct, Payload: payload, Delivery: o.marked(payload)}, nil
		}
		return Crafted{Mode: Direct, Payload: payload, Delivery: atk.Inject(o.Instruction, task)}, nil
	}
	ch := o.ChannelMethod
	if ch == nil {
		if ch, err = channel.New(o.Channel, o.ChannelKwargs, o.Seed); err != nil {
			return Crafted{}, err
		}
	}
	data := o.Data
	if data == "" {
		if s, ok := ch.(channel.Sampler); ok {
			data = s.Sample()
		}
	}
	out := Crafted{Mode: Indirect, Payload: payload}
	switch o.CarrierMode {
	case "", "text":
		if out.Delivery, err = ch.Taint(data, payload); err != nil {
			return Crafted{}, fmt.Errorf("channel %s: %w", o.Channel, err)
		}
	case "file":
		fw, ok := ch.(channel.FileWriter)
		if !ok {
			return Crafted{}, fmt.Errorf("channel %s cannot write a file carrier", o.Channel)
		}
		if out.Path, err = fw.TaintFile(o.Dir, data, payload); err != nil {
			return Crafted{}, fmt.Errorf("channel %s: %w", o.Channel, err)
		}
		if out.Delivery, err = readCarrier(ch, out.Path); err != nil {
			return Crafted{}, fmt.Errorf("channel %s: %w", o.Channel, err)
		}
	default:
		return Crafted{}, fmt.Errorf("unknown carrier mode %q; known: text, file", o.CarrierMode)
	}
	return out, nil
}

// readCarrier returns what a tool reading the file at path hands the model:
// the channel's reading when it has one (a PDF's extracted text), else the
// file's bytes.
func readCarrier(ch channel.Channel, path string) (string, error) {
	if r, ok := ch.(channel.FileReader); ok {
		return r.ReadFile(path)
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

// hasMarker reports whether the instruction has the payload marker.
func (o Options) hasMarker() bool {
	return o.PayloadMarker != "" && strings.Contains(o.Instruction, o.PayloadMarker)
}

// marked returns the instruction with its payload marker replaced by
// payload; without a marker, the instruction as it is.
func (o Options) marked(payload string) string {
	if !o.hasMarker() {
		return o.Instruction
	}
	return strings.Replace(o.Instruction, o.PayloadMarker, payload, 1)
}
