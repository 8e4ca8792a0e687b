package report

import (
	"fmt"
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
// success flipped.
func Compare(base, new []matrix.Result, by ...string) Comparison {
	bs, ns := Summarize(base, by...), Summarize(new, by...)
	c := Comparison{By: by, Overall: change(nil, bs.ASR, ns.ASR)}
	bg := map[string]Group{}
	for _, g := range bs.Groups {
		bg[strings.Join(g.Values, "\x00")] = g
	}
	seen := map[string]bool{}
	for _, g := range ns.Groups {
		k := strings.Join(g.Values, "\x00")
		seen[k] = true
		c.Groups = append(c.Groups, change(g.Values, bg[k].ASR, g.ASR))
	}
	for _, g := range bs.Groups {
		if k := strings.Join(g.Values, "\x00"); !seen[k] {
			c.Groups = append(c.Groups, change(g.Values, g.ASR, NewRate(0, 0)))
		}
	}
	sort.Slice(c.Groups, func(i, j int) bool {
		return strings.Join(c.Groups[i].Values, "\x00") < strings.Join(c.Groups[j].Values, "\x00")
	})
	// Cells pair up by key; failing that (the runs used different targets,
	// which are part of the key) by what the cell tried: case, agent,
	// attack, defense, channel and repeat.
	byKey, byIdentity := map[string]int{}, map[string]int{}
	for i, r := range base {
		if r.Key != "" {
			byKey[r.Key] = i
		}
		byIdentity[identity(r)] = i
	}
	matched := make([]bool, len(base))
	for _, r := range new {
		i, ok := byKey[r.Key]
		if !ok || r.Key == "" {
			i, ok = byIdentity[identity(r)]
		}
		if !ok || matched[i] {
			c.OnlyNew++
			continue
		}
		matched[i] = true
		b := base[i]
		bj, bsucc, _ := counts(b)
		nj, nsucc, _ := counts(r)
		if bj && nj && bsucc != nsucc {
			c.Flips = append(c.Flips, Flip{Key: r.Key, Label: label(r), Base: b.Outcome, New: r.Outcome, BaseSuccess: bsucc, NewSuccess: nsucc})
		}
	}
	for _, m := range matched {
		if !m {
			c.OnlyBase++
		}
	}
	sort.Slice(c.Flips, func(i, j int) bool { return c.Flips[i].Label+c.Flips[i].Key < c.Flips[j].Label+c.Flips[j].Key })
	return c
}

func change(values []string, b, n Rate) Change {
	z, p := TwoProportion(b.Successes, b.N, n.Successes, n.N)
	return Change{Values: values, Base: b, New: n, Delta: n.Rate - b.Rate, Z: z, P: p, Significant: p < Alpha && b.N > 0 && n.N > 0}
}

// identity names what a cell tried, whatever the target.
func identity(r matrix.Result) string {
	return fmt.Sprintf("%s#%d#%v", label(r), r.RepeatIndex, r.MethodSpecs)
}

func label(r matrix.Result) string {
	ch := r.Channel
	if ch == "" {
		ch = "(direct)"
	}
	parts := []string{r.Agent, r.Attack, r.Defense, ch}
	if r.CaseID != "" {
		parts = append([]string{r.CaseID}, parts...)
	}
	return strings.Join(parts, " · ")
}
