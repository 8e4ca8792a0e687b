package judge

import (
	"strings"
	"sync"
)

// normalOf returns the normal form of a text the model was given (see
// normalize), from a cache: the same system prompt, task and payload, and
// the same crafted prompt or tool result over a case's repeats, reach the
// judge cell after cell, and normalising them was most of its cost.
func normalOf(s string) string {
	if len(s) > maxCachedText {
		return normalize(s, false).norm
	}
	inputs.mu.RLock()
	n, ok := inputs.m[s]
	inputs.mu.RUnlock()
	if ok {
		return n
	}
	n = normalize(s, false).norm
	inputs.mu.Lock()
	if len(inputs.m) >= maxCachedTexts {
		clear(inputs.m) // start over: cheaper than tracking use
	}
	inputs.m[strings.Clone(s)] = n // a copy: s may hold on to a larger text
	inputs.mu.Unlock()
	return n
}

// The cache holds at most maxCachedTexts texts of at most maxCachedText
// bytes each (and their normal forms): 32 MiB at most.
const (
	maxCachedTexts = 1024
	maxCachedText  = 16 << 10
)

// inputs is the cache of normalOf, shared by every judge of the process.
var inputs = struct {
	mu sync.RWMutex
	m  map[string]string
}{m: make(map[string]string, maxCachedTexts)}
