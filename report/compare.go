package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"slices"
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
	// BaseToolErrorCells and NewToolErrorCells count each run's judged
	// cells whose every tool call errored (see Summary.ToolErrorCells).
	BaseToolErrorCells int `json:"base_tool_error_cells,omitempty"`
	NewToolErrorCells  int `json:"new_tool_error_cells,omitempty"`
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
// and about 40 bytes per base cell (its key, what it tried, its verdict),
// never the results themselves.
type Comparer struct {
	by        []string
	base, new *Aggregator
	cells     []baseCell
	hexKeys   map[uint64]int32 // pikit's keys: 16 hex digits
	keys      map[string]int32 // any other key
	byIdent   map[identity]int32
	labels    interner
	specs     interner
	outcomes  interner
	buf       []byte
	flips     []Flip
	onlyNew   int
}

// baseCell is what a Comparer keeps of a base result.
type baseCell struct {
	ident   identity
	outcome uint32 // in outcomes
	judged  bool
	success bool
	matched bool
}

// identity names what a cell tried, whatever the target: its label, its
// method options and its repeat index.
type identity struct {
	label, specs uint32
	repeat       int32
}

// interner numbers strings, each kept once.
type interner struct {
	ids   map[string]uint32
	names []string
}

// id returns the number of s, numbering it if it is new.
func (in *interner) id(s []byte) uint32 {
	if id, ok := in.ids[string(s)]; ok {
		return id
	}
	return in.add(string(s))
}

// idString is id for a string.
func (in *interner) idString(s string) uint32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	return in.add(s)
}

func (in *interner) add(s string) uint32 {
	if in.ids == nil {
		in.ids = map[string]uint32{}
	}
	id := uint32(len(in.names))
	in.names = append(in.names, s)
	in.ids[s] = id
	return id
}

// hexKey reads a key of 16 lowercase hex digits (pikit's) as a number.
func hexKey(k string) (uint64, bool) {
	if len(k) != 16 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(k); i++ {
		d := hexDigit[k[i]]
		if d > 15 {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// hexDigit is the value of each lowercase hex digit, 0xff for any other
// byte.
var hexDigit = func() (t [256]uint8) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = uint8(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = uint8(c - 'a' + 10)
	}
	return t
}()

// NewComparer returns a Comparer grouping by the named fields.
func NewComparer(by ...string) *Comparer {
	return &Comparer{by: by, base: NewAggregator(by...), new: NewAggregator(by...),
		hexKeys: map[uint64]int32{}, keys: map[string]int32{}}
}

func (c *Comparer) identity(r *Record) identity {
	c.buf = r.appendLabel(c.buf[:0])
	return identity{label: c.labels.id(c.buf), specs: c.specs.idString(r.MethodSpecs), repeat: int32(r.RepeatIndex)}
}

// AddBase adds a result of the base run.
func (c *Comparer) AddBase(r *Record) {
	c.base.AddRecord(r)
	judged, success, _ := r.counts()
	i := int32(len(c.cells))
	c.cells = append(c.cells, baseCell{ident: c.identity(r), outcome: c.outcomes.idString(string(r.Outcome)), judged: judged, success: success})
	if h, ok := hexKey(r.Key); ok {
		c.hexKeys[h] = i
	} else if r.Key != "" {
		c.keys[r.Key] = i
	}
}

// AddNew adds a result of the new run; call it after every AddBase.
func (c *Comparer) AddNew(r *Record) {
	c.new.AddRecord(r)
	var i int32
	ok := false
	if h, hex := hexKey(r.Key); hex {
		i, ok = c.hexKeys[h]
	} else if r.Key != "" {
		i, ok = c.keys[r.Key]
	}
	if !ok {
		// Pair by what the cell tried. The index is built the first
		// time it is needed: runs of the same config pair by key.
		if c.byIdent == nil {
			c.byIdent = make(map[identity]int32, len(c.cells))
			for j := range c.cells {
				c.byIdent[c.cells[j].ident] = int32(j)
			}
		}
		i, ok = c.byIdent[c.identity(r)]
	}
	if !ok || c.cells[i].matched {
		c.onlyNew++
		return
	}
	b := &c.cells[i]
	b.matched = true
	nj, nsucc, _ := r.counts()
	if b.judged && nj && b.success != nsucc {
		c.buf = r.appendLabel(c.buf[:0])
		c.flips = append(c.flips, Flip{Key: r.Key, Label: c.labels.names[c.labels.id(c.buf)],
			Base: judge.Outcome(c.outcomes.names[b.outcome]), New: r.Outcome, BaseSuccess: b.success, NewSuccess: nsucc})
	}
}

// Comparison returns the comparison of what was added. Its Flips are the
// Comparer's own, sorted by label and key.
func (c *Comparer) Comparison() Comparison {
	bs, ns := c.base.Summary(), c.new.Summary()
	cmp := Comparison{By: c.by, Overall: change(nil, bs.ASR, ns.ASR), OnlyNew: c.onlyNew,
		BaseToolErrorCells: bs.ToolErrorCells, NewToolErrorCells: ns.ToolErrorCells}
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
	slices.SortFunc(c.flips, func(a, b Flip) int {
		if n := strings.Compare(a.Label, b.Label); n != 0 {
			return n
		}
		return strings.Compare(a.Key, b.Key)
	})
	if c.flips == nil {
		c.flips = []Flip{}
	}
	cmp.Flips = c.flips
	return cmp
}

// WriteJSON writes the comparison as indented JSON, one flipped cell at a
// time: a comparison of large runs with many flips is not built whole in
// memory a second time.
func (c Comparison) WriteJSON(w io.Writer) error {
	head := struct {
		By                 []string `json:"by,omitempty"`
		Overall            Change   `json:"overall"`
		Groups             []Change `json:"groups,omitempty"`
		OnlyBase           int      `json:"only_in_base"`
		OnlyNew            int      `json:"only_in_new"`
		BaseToolErrorCells int      `json:"base_tool_error_cells,omitempty"`
		NewToolErrorCells  int      `json:"new_tool_error_cells,omitempty"`
	}{c.By, c.Overall, c.Groups, c.OnlyBase, c.OnlyNew, c.BaseToolErrorCells, c.NewToolErrorCells}
	b, err := json.MarshalIndent(head, "", "  ")
	if err != nil {
		return err
	}
	// Put the flips last: replace the closing brace with the list.
	b = bytes.TrimSuffix(bytes.TrimRight(b, "\n"), []byte("}"))
	b = bytes.TrimRight(b, "\n ")
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(b)
	bw.WriteString(",\n  \"flips\": [")
	for i, f := range c.Flips {
		fb, err := json.Marshal(f)
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(fb)
	}
	if len(c.Flips) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}

func change(values []string, b, n Rate) Change {
	z, p := TwoProportion(b.Successes, b.N, n.Successes, n.N)
	return Change{Values: values, Base: b, New: n, Delta: n.Rate - b.Rate, Z: z, P: p, Significant: p < Alpha && b.N > 0 && n.N > 0}
}
