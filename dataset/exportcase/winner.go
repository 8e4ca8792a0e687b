package exportcase

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/method"
)

// The winning candidate an adaptive result records in its metadata, read
// with every type checked: a results file is untrusted.

// Winner is what an adaptive result says about its winning candidate.
type Winner struct {
	payload  string
	turns    []string // every user turn of a direct crescendo win, the last the payload
	parts    []string // the parts of an indirect crescendo win, the last the payload
	channel  map[string]any
	strategy string
	stop     string
	// rounds sent, the round that succeeded, and the target's queries up
	// to it; 0 when not recorded.
	rounds, successRound, queries int
	size                          int // bytes of payload, turns and parts
}

// WinnerOf reads the winning candidate of a result's metadata, checking
// every type (the file is untrusted); nil when it records none.
func WinnerOf(res *matrix.Result) (*Winner, error) {
	meta := res.Metadata
	v, ok := meta["winning_injection"]
	if !ok {
		return nil, nil
	}
	payload, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("metadata.winning_injection: want a string, got %s", describeValue(v))
	}
	if payload == "" {
		return nil, errors.New("metadata.winning_injection is empty")
	}
	w := &Winner{payload: payload, size: len(payload)}
	var err error
	if w.turns, err = stringList(meta, "winning_turns"); err != nil {
		return nil, err
	}
	if w.parts, err = stringList(meta, "winning_parts"); err != nil {
		return nil, err
	}
	for _, s := range append(slices.Clone(w.turns), w.parts...) {
		w.size += len(s)
	}
	if w.size > maxWinningBytes {
		return nil, fmt.Errorf("the winning injection holds %d bytes, over the %d MiB export-case reads", w.size, maxWinningBytes>>20)
	}
	if n := len(w.turns); n > 0 && w.turns[n-1] != payload {
		return nil, errors.New("metadata.winning_turns: the last turn is not metadata.winning_injection")
	}
	if n := len(w.parts); n > 0 && w.parts[n-1] != payload {
		return nil, errors.New("metadata.winning_parts: the last part is not metadata.winning_injection")
	}
	if c, ok := meta["winning_channel_options"]; ok {
		if w.channel, ok = c.(map[string]any); !ok {
			return nil, fmt.Errorf("metadata.winning_channel_options: want an object, got %s", describeValue(c))
		}
	}
	if a, ok := meta["adaptive"]; ok {
		m, ok := a.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("metadata.adaptive: want an object, got %s", describeValue(a))
		}
		if w.strategy, err = metaString(m, "adaptive.strategy", "strategy"); err != nil {
			return nil, err
		}
		if w.stop, err = metaString(m, "adaptive.stop", "stop"); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			key string
			dst *int
		}{{"rounds", &w.rounds}, {"success_round", &w.successRound}, {"queries_to_success", &w.queries}} {
			if *f.dst, err = metaCount(m, "adaptive."+f.key, f.key); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

// Size returns the bytes of the winning texts.
func (w *Winner) Size() int { return w.size }

// Parts returns how many tool results the injection was spread over (1
// or 0 for one).
func (w *Winner) Parts() int { return len(w.parts) }

// describeValue names a JSON value for a message, quoted in ASCII.
func describeValue(v any) string {
	s := fmt.Sprintf("%+q", clip(method.Describe(v), 80))
	return s[1 : len(s)-1]
}

// metaString reads an optional string of a metadata object.
func metaString(m map[string]any, name, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("metadata.%s: want a string, got %s", name, describeValue(v))
	}
	return s, nil
}

// metaCount reads an optional count (a whole number, 0 or more).
func metaCount(m map[string]any, name, key string) (int, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, nil
	}
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) || f > 1<<40 {
		return 0, fmt.Errorf("metadata.%s: want a whole number, got %s", name, describeValue(v))
	}
	return int(f), nil
}

// stringList reads an optional list of strings of the metadata.
func stringList(m map[string]any, key string) ([]string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("metadata.%s: want a list of strings, got %s", key, describeValue(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		if out[i], ok = e.(string); !ok {
			return nil, fmt.Errorf("metadata.%s[%d]: want a string, got %s", key, i, describeValue(e))
		}
	}
	return out, nil
}
