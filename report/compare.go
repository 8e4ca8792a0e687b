package report

import (
	"math"
	"sort"
	"strings"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// TwoProportion is the pooled two-proportion z-test of s1/n1 against
// s2/n2: z (positive when the second rate is higher) and the two-sided
// p-value. With no data or no variance it returns 0, 1.
func TwoProportion(s1, n1, s2, n2 int) (z, p float64) {
	if n1 == 0 || n2 == 0 {
		return 0, 1
	}
	p1, p2 := float64(s1)/float64(n1), float64(s2)/float64(n2)
	pool := float64(s1+s2) / float64(n1+n2)
	se := math.Sqrt(pool * (1 - pool) * (1/float64(n1) + 1/float64(n2)))
	if se == 0 {
		return 0, 1
	}
	z = (p2 - p1) / se
	return z, math.Erfc(math.Abs(z) / math.Sqrt2)
}

// Alpha is the significance level below which a change is flagged.
const Alpha = 0.05

// Change is one group's attack success rate in two runs.
type Change struct {
	Values      []string `json:"values"`
	Base        Rate     `json:"base"`
	New         Rate     `json:"new"`
	Delta       float64  `json:"delta"` // new rate − base rate
	Z           float64  `json:"z"`
	P           float64  `json:"p"`
	Significant bool     `json:"significant"` // p < Alpha: unlikely to be noise
}

// Flip is a cell (by key) whose verdict changed between the runs.
type Flip struct {
	Key         string        `json:"key"`
	Label       string        `json:"label"` // case, agent, attack, defense, channel
	Base        judge.Outcome `json:"base"`
	New         judge.Outcome `json:"new"`
	BaseSuccess bool          `json:"base_success"`
	NewSuccess  bool          `json:"new_success"`
}

// Comparison sets a new run against a base run.
type Comparison struct {
	By       []string `json:"by,omitempty"`
	Overall  Change   `json:"overall"`
	Groups   []Change `json:"groups,omitempty"`
	Flips    []Flip   `json:"flips"`
	OnlyBase int      `json:"only_in_base"` // keys the new run lacks
	OnlyNew  int      `json:"only_in_new"`
}

// Compare computes the per-group change in attack success rate between
// base and new, with a two-proportion test per group, and the cells whose
// success flipped. It is a Comparer fed both slices.
func Compare(base, new []matrix.Result, by ...string) Comparison {
	c := NewComparer(by...)
	for i := range base {
		rec := RecordOf(&base[i])
		c.AddBase(&rec)
	}
	for i := range new {
		rec := RecordOf(&new[i])
		c.AddNew(&rec)
	}
	return c.Comparison()
}

// Comparer compares two runs read one result at a time: every result of
// the base run (AddBase), then every result of the new run (AddNew).
// Cells pair up by key; failing that (the runs used different targets,
// which are part of the key) by what the cell tried: case, agent, attack,
// defense, channel, repeat and method options. It keeps counts per group
// and a small record per base cell (its key, what it tried, its verdict),
// never the results themselves.
type Comparer struct {
	by        []string
	base, new *Aggregator
	cells     []baseCell
	byKey     map[string]int32
	byIdent   map[identity]int32
	labels    interner
	specs     interner
	buf       []byte
	flips     []Flip
	onlyNew   int
}

// baseCell is what a Comparer keeps of a base result.
type baseCell struct {
	key             string
	outcome         judge.Outcome
	judged, success bool
	matched         bool
}

// identity names what a cell tried, whatever the target: its label, its
// method options and its repeat index.
type identity struct {
	label, specs uint32
	repeat       int
}

// interner numbers strings, each kept once.
type interner struct {
	ids   map[string]uint32
	names []string
}

func (in *interner) id(s []byte) uint32 {
	if id, ok := in.ids[string(s)]; ok {
		return id
	}
	if in.ids == nil {
		in.ids = map[string]uint32{}
	}
	id := uint32(len(in.names))
	in.names = append(in.names, string(s))
	in.ids[in.names[id]] = id
	return id
}

func (in *interner) lookup(s []byte) (uint32, bool) {
	id, ok := in.ids[string(s)]
	return id, ok
}

// NewComparer returns a Comparer grouping by the named fields.
func NewComparer(by ...string) *Comparer {
	return &Comparer{by: by, base: NewAggregator(by...), new: NewAggregator(by...),
		byKey: map[string]int32{}, byIdent: map[identity]int32{}}
}

// AddBase adds a result of the base run.
func (c *Comparer) AddBase(r *Record) {
	c.base.AddRecord(r)
	judged, success, _ := r.counts()
	i := int32(len(c.cells))
	c.cells = append(c.cells, baseCell{key: r.Key, outcome: r.Outcome, judged: judged, success: success})
	if r.Key != "" {
		c.byKey[r.Key] = i
	}
	c.buf = r.appendLabel(c.buf[:0])
	id := identity{label: c.labels.id(c.buf), specs: c.specs.id([]byte(r.MethodSpecs)), repeat: r.RepeatIndex}
	c.byIdent[id] = i
}

// AddNew adds a result of the new run; call it after every AddBase.
func (c *Comparer) AddNew(r *Record) {
	c.new.AddRecord(r)
	i, ok := c.byKey[r.Key]
	if !ok || r.Key == "" {
		ok = false
		c.buf = r.appendLabel(c.buf[:0])
		label, lok := c.labels.lookup(c.buf)
		specs, sok := c.specs.lookup([]byte(r.MethodSpecs))
		if lok && sok {
			i, ok = c.byIdent[identity{label: label, specs: specs, repeat: r.RepeatIndex}]
		}
	}
	if !ok || c.cells[i].matched {
		c.onlyNew++
		return
	}
	b := &c.cells[i]
	b.matched = true
	nj, nsucc, _ := r.counts()
	if b.judged && nj && b.success != nsucc {
		c.flips = append(c.flips, Flip{Key: r.Key, Label: r.label(), Base: b.outcome, New: r.Outcome, BaseSuccess: b.success, NewSuccess: nsucc})
	}
}

// Comparison returns the comparison of what was added.
func (c *Comparer) Comparison() Comparison {
	bs, ns := c.base.Summary(), c.new.Summary()
	cmp := Comparison{By: c.by, Overall: change(nil, bs.ASR, ns.ASR), OnlyNew: c.onlyNew}
	bg := map[string]Group{}
	for _, g := range bs.Groups {
		bg[strings.Join(g.Values, "\x00")] = g
	}
	seen := map[string]bool{}
	for _, g := range ns.Groups {
		k := strings.Join(g.Values, "\x00")
		seen[k] = true
		cmp.Groups = append(cmp.Groups, change(g.Values, bg[k].ASR, g.ASR))
	}
	for _, g := range bs.Groups {
		if k := strings.Join(g.Values, "\x00"); !seen[k] {
			cmp.Groups = append(cmp.Groups, change(g.Values, g.ASR, NewRate(0, 0)))
		}
	}
	sort.Slice(cmp.Groups, func(i, j int) bool {
		return strings.Join(cmp.Groups[i].Values, "\x00") < strings.Join(cmp.Groups[j].Values, "\x00")
	})
	for _, b := range c.cells {
		if !b.matched {
			cmp.OnlyBase++
		}
	}
	cmp.Flips = append([]Flip{}, c.flips...)
	sort.Slice(cmp.Flips, func(i, j int) bool {
		return cmp.Flips[i].Label+cmp.Flips[i].Key < cmp.Flips[j].Label+cmp.Flips[j].Key
	})
	return cmp
}

func change(values []string, b, n Rate) Change {
	z, p := TwoProportion(b.Successes, b.N, n.Successes, n.N)
	return Change{Values: values, Base: b, New: n, Delta: n.Rate - b.Rate, Z: z, P: p, Significant: p < Alpha && b.N > 0 && n.N > 0}
}
