package judge

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// normalOf returns the normal form of a text the model was given (see
// normalize), from a cache: the same system prompt, task and payload, and
// the same crafted prompt or tool result over a case's repeats, reach the
// judge cell after cell, and normalising them was most of its cost.
func normalOf(s string) *normalText {
	if len(s) > maxCachedText {
		return newNormalText(s)
	}
	inputs.mu.RLock()
	n, ok := inputs.m[s]
	inputs.mu.RUnlock()
	if ok {
		return n
	}
	n = newNormalText(s)
	inputs.mu.Lock()
	if len(inputs.m) >= maxCachedTexts {
		clear(inputs.m) // start over: cheaper than tracking use
	}
	inputs.m[strings.Clone(s)] = n // a copy: s may hold on to a larger text
	inputs.mu.Unlock()
	return n
}

// normalText is a text's normal form, the number of its words, and where
// the last canary asked for occurs in it: a run judges every cell against
// the same canary, so finding it again in the same input is spared too.
type normalText struct {
	norm  string
	words int
	last  atomic.Pointer[canarySpans]
}

// canarySpans are the byte ranges of a normal form where a canary's
// needles occur, needle after needle, at most maxEchoSources of them.
type canarySpans struct {
	needles []string
	spans   [][2]int
}

func newNormalText(s string) *normalText {
	n := normalize(s, false).norm
	return &normalText{norm: n, words: strings.Count(n, " ") - 1}
}

// spans returns where the needles of a canary occur in the form (see
// canarySpans); callers must not change the result.
func (t *normalText) spans(needles []string) [][2]int {
	if last := t.last.Load(); last != nil && slices.Equal(last.needles, needles) {
		return last.spans
	}
	var occ [][2]int
	for _, needle := range needles {
		occ = append(occ, spans(t.norm, needle)...)
	}
	if len(occ) > maxEchoSources {
		occ = occ[:maxEchoSources]
	}
	t.last.Store(&canarySpans{needles: needles, spans: occ})
	return occ
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
	m  map[string]*normalText
}{m: make(map[string]*normalText, maxCachedTexts)}

// canaryFormOf is newCanaryForm, from a cache: a run judges every cell
// against the same canary or few. Callers must not change the result.
func canaryFormOf(canary string) canaryForm {
	return canaryForms.get([2]string{canary}, func() canaryForm { return newCanaryForm(canary) })
}

// requestOf is request, from a cache of the canary's requests in the
// instructions and payloads a run gives every cell.
func requestOf(instruction, canary string, c canaryForm) requested {
	return requests.get([2]string{instruction, canary}, func() requested {
		var r requested
		r.before, r.after, r.verb = request(instruction, c)
		return r
	})
}

// requested is what request returns.
type requested struct {
	before, after int
	verb          string
}

var (
	canaryForms = newMemo[canaryForm]()
	requests    = newMemo[requested]()
)

// memo caches a function of one or two texts the harness builds
// (canaries, tasks, payloads), bounded as the cache of normalOf is: at
// most maxCachedTexts keys of at most maxCachedText bytes, emptied when
// full.
type memo[V any] struct {
	mu sync.RWMutex
	m  map[[2]string]V
}

func newMemo[V any]() *memo[V] { return &memo[V]{m: map[[2]string]V{}} }

// get returns the value for key, from the cache, or from f when it is not
// there.
func (c *memo[V]) get(key [2]string, f func() V) V {
	if len(key[0])+len(key[1]) > maxCachedText {
		return f()
	}
	c.mu.RLock()
	v, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = f()
	c.mu.Lock()
	if len(c.m) >= maxCachedTexts {
		clear(c.m)
	}
	c.m[[2]string{strings.Clone(key[0]), strings.Clone(key[1])}] = v
	c.mu.Unlock()
	return v
}
