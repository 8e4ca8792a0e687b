package adaptive

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/attack"
)

// genome is one composition of pikit's transforms: a choice (or none, -1)
// of each kind, applied in a fixed order: paraphrase, encoding, attack
// wording, suffix; and channel options for the placement.
type genome struct {
	para, enc, atk int
	suffix         string
	place          map[string]any
}

// wordings are the attacks a mutation may reword with: every one that
// words a task once, but those that are encodings.
func wordings() []string {
	var out []string
	for _, n := range attack.AttackNames() {
		if !slices.Contains(encodingAttacks, n) && n != "cross_channel" {
			out = append(out, n)
		}
	}
	return out
}

// encodingAttacks are the attacks that encode the task.
var encodingAttacks = []string{"obfuscation", "payload_splitting"}

// encodings are the encoding transforms: an attack with options.
var encodings = []struct {
	name string
	opts map[string]any
}{
	{"obfuscation", map[string]any{"scheme": "base64"}},
	{"obfuscation", map[string]any{"scheme": "leetspeak"}},
	{"payload_splitting", map[string]any{"n_parts": 2}},
	{"payload_splitting", map[string]any{"n_parts": 3}},
}

// mutator builds candidates from genomes.
type mutator struct {
	s     *search
	kinds []string
	words []string
	paras []string
	place map[string][]string
	keys  []string // placement options, sorted
}

func (s *search) mutator() *mutator {
	m := &mutator{s: s, kinds: s.a.Transforms, words: wordings(), paras: paraphrases(s.goal.Task), place: s.o.Placements()}
	m.keys = slices.Sorted(maps.Keys(m.place))
	if len(m.keys) == 0 {
		m.kinds = slices.DeleteFunc(slices.Clone(m.kinds), func(k string) bool { return k == attack.TransformPlacements })
	}
	return m
}

// build applies a genome to the task.
func (m *mutator) build(g genome) (Candidate, string, error) {
	text := m.s.goal.Task
	var ops []string
	if g.para >= 0 {
		text = m.paras[g.para]
		ops = append(ops, fmt.Sprintf("paraphrase%d", g.para+1))
	}
	if g.enc >= 0 {
		e := encodings[g.enc]
		a, err := attack.New(e.name, e.opts, m.s.a.Seed)
		if err != nil {
			return Candidate{}, "", err
		}
		text = a.Inject("", text)
		ops = append(ops, encodingLabel(e.name, e.opts))
	}
	if g.atk >= 0 {
		a, err := attack.New(m.words[g.atk], nil, m.s.a.Seed)
		if err != nil {
			return Candidate{}, "", err
		}
		text = a.Inject("", text)
		ops = append(ops, m.words[g.atk])
	}
	if g.suffix != "" {
		text += " " + g.suffix
		ops = append(ops, "suffix")
	}
	c := m.s.wrap(text)
	if len(g.place) > 0 {
		c.Channel = g.place
		for _, k := range slices.Sorted(maps.Keys(g.place)) {
			ops = append(ops, fmt.Sprintf("%s=%v", k, g.place[k]))
		}
	}
	if len(ops) == 0 {
		ops = append(ops, "task")
	}
	return c, "mutate:" + strings.Join(ops, "+"), nil
}

// none is the genome of the task as it is.
func none() genome { return genome{para: -1, enc: -1, atk: -1} }

// flip changes one kind of transform of g (or sets it, from none) to
// another of its choices.
func (m *mutator) flip(g genome, kind string) genome {
	rng := m.s.rng
	switch kind {
	case attack.TransformParaphrases:
		g.para = other(rng.IntN, g.para, len(m.paras))
	case attack.TransformEncodings:
		g.enc = other(rng.IntN, g.enc, len(encodings))
	case attack.TransformAttacks:
		g.atk = other(rng.IntN, g.atk, len(m.words))
	case attack.TransformSuffixes:
		g.suffix = m.suffix()
	case attack.TransformPlacements:
		k := m.keys[rng.IntN(len(m.keys))]
		choices := m.place[k]
		p := maps.Clone(g.place)
		if p == nil {
			p = map[string]any{}
		}
		p[k] = choices[rng.IntN(len(choices))]
		g.place = p
	}
	return g
}

// other picks a choice of n other than cur, or none (-1) one time in
// n+1, so a transform can also be dropped.
func other(intn func(int) int, cur, n int) int {
	if n == 0 {
		return -1
	}
	v := intn(n+1) - 1
	if v == cur {
		v = (v+2)%(n+1) - 1
	}
	return v
}

// suffixWords build random suffixes: ordinary words in an odd order, the
// kind of noise that moves a model's attention without reading as an
// instruction.
var suffixWords = strings.Fields("ledger quartz harbor violet ninety sonnet pivot amber relay cobalt meadow tandem orbit lantern cipher willow")

func (m *mutator) suffix() string {
	rng := m.s.rng
	n := 3 + rng.IntN(4)
	w := make([]string, n)
	for i := range w {
		w[i] = suffixWords[rng.IntN(len(suffixWords))]
	}
	return "[" + strings.Join(w, " ") + "]"
}

// random draws a genome with each kind of transform present half the time
// (at least one).
func (m *mutator) random() genome {
	g := none()
	for g.para < 0 && g.enc < 0 && g.atk < 0 && g.suffix == "" && len(g.place) == 0 {
		for _, k := range m.kinds {
			if m.s.rng.IntN(2) == 0 {
				g = m.flip(g, k)
			}
		}
	}
	return g
}

// fingerprint identifies a candidate, so none is sent twice.
func fingerprint(c Candidate) string {
	b, _ := json.Marshal(c.Channel)
	return c.Payload + "\x00" + string(b)
}

// bestOfN sends seeded random compositions of transforms until one lands.
func (s *search) bestOfN(ctx context.Context) error {
	m := s.mutator()
	at := s.first()
	for {
		if _, _, err := s.try(ctx, at); err != nil {
			return err
		}
		var err error
		if at, _, err = m.fresh(m.random); err != nil {
			return err
		}
	}
}

// fresh draws genomes until one builds a candidate not yet sent, and
// returns it with its genome; after 50 draws the search is exhausted
// (errStop).
func (m *mutator) fresh(draw func() genome) (attempt, genome, error) {
	for range 50 {
		g := draw()
		c, op, err := m.build(g)
		if err != nil {
			return attempt{}, g, err
		}
		if m.s.sent[fingerprint(c)] == 0 {
			return attempt{cand: c, operator: op}, g, nil
		}
	}
	m.s.res.Stop = StopExhausted
	return attempt{}, genome{}, errStop
}

// greedy changes one transform at a time of the best composition so far,
// keeping a change that scores at least as well.
func (s *search) greedy(ctx context.Context) error {
	m := s.mutator()
	best, bestScore, bestIndex := none(), -1, 0
	at, g := s.first(), none()
	for {
		r, _, err := s.try(ctx, at)
		if err != nil {
			return err
		}
		if r.Score >= bestScore {
			best, bestScore, bestIndex = g, r.Score, r.Index
		}
		if at, g, err = m.fresh(func() genome { return m.flip(best, m.kinds[s.rng.IntN(len(m.kinds))]) }); err != nil {
			return err
		}
		at.parent = bestIndex
	}
}

// encodingLabel names an encoding transform: "base64", "split3".
func encodingLabel(name string, opts map[string]any) string {
	if s, ok := opts["scheme"]; ok {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("split%v", opts["n_parts"])
}
