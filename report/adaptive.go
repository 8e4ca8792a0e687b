package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/matrix"
)

// An adaptive attack (attack "adaptive") searches for a landing injection
// round by round; each of its cells is one result whose metadata.adaptive
// says how the search went: its strategy, the rounds it sent, why it
// stopped, and, when it landed, the round and the target model calls it
// took. The section built here shows how soon adaptive attacks land: the
// cumulative success rate by round, and the rounds and queries a success
// took, per defense.
//
// Results files come from others, so every number of that metadata is
// checked: a value of the wrong type, not a whole number, or out of range
// is left out, never trusted.

// Bounds on what a result's adaptive metadata may claim; a number outside
// them is ignored.
const (
	maxAdaptiveRound   = 1_000_000
	maxAdaptiveQueries = 1_000_000_000
)

// AdaptiveRoundsShown is how many rounds the success-by-round tables list
// one by one; past it they list only the last round seen.
const AdaptiveRoundsShown = 20

const (
	// maxCurveDefenses bounds the defense columns of the success-by-round
	// table and its charts; the queries table lists every defense.
	maxCurveDefenses = 12
	// maxStrategies bounds the strategy names counted; others are counted
	// together.
	maxStrategies = 32
	// chartEvery is how many rounds the chart draws point by point; past
	// it, chartPoints evenly spaced rounds.
	chartEvery  = 60
	chartPoints = 200
)

// adaptiveStops are the reasons a search stops; stopsAtLimit those that
// mean it ran out of rounds, tokens or budget.
var (
	adaptiveStops = []string{"success", "max_rounds", "max_tokens", "budget", "exhausted", "error"}
	stopsAtLimit  = []string{"max_rounds", "max_tokens", "budget"}
)

// otherName counts the strategies past maxStrategies and the stop reasons
// pikit does not know.
const otherName = "(other)"

var quotedAdaptive = []byte(`"adaptive"`)

// adaptiveCell is what the section reads of one adaptive result.
type adaptiveCell struct {
	strategy     string
	hasStrategy  bool
	stop         string
	rounds       int   // rounds sent; -1 when not known
	maxRounds    int   // the search's round limit; 0 when not known
	successRound int   // 1-based; 0 when not known
	queries      int64 // target model calls to the success; -1 when not known
}

// won returns the round the cell first succeeded in, 0 when it is not
// known: its success_round, or the rounds it sent when it stopped at a
// success (a search stops at its first).
func (c *adaptiveCell) won() int {
	if c.successRound > 0 {
		return c.successRound
	}
	if c.stop == "success" && c.rounds > 0 {
		return c.rounds
	}
	return 0
}

// adaptiveOf reads a record's adaptive metadata; ok is false when the
// record is not an adaptive cell (attack "adaptive", or metadata.adaptive
// an object).
func adaptiveOf(r *Record) (c adaptiveCell, ok bool) {
	c.rounds, c.queries = -1, -1
	var meta map[string]any
	switch {
	case r.full != nil:
		meta = adaptiveMap(r.full.Metadata["adaptive"])
	case r.MetadataText != nil:
		meta = rawAdaptive(r.MetadataText)
	}
	if meta == nil && r.Attack != "adaptive" {
		return c, false
	}
	c.fill(meta)
	return c, true
}

func (c *adaptiveCell) fill(meta map[string]any) {
	if meta == nil {
		return
	}
	c.strategy, c.hasStrategy = metaString(meta["strategy"])
	c.stop, _ = metaString(meta["stop"])
	if n, ok := metaInt(meta["rounds"], 0, maxAdaptiveRound); ok {
		c.rounds = int(n)
	}
	if n, ok := metaInt(meta["max_rounds"], 1, maxAdaptiveRound); ok {
		c.maxRounds = int(n)
	}
	if n, ok := metaInt(meta["success_round"], 1, maxAdaptiveRound); ok {
		c.successRound = int(n)
	}
	if n, ok := metaInt(meta["queries_to_success"], 0, maxAdaptiveQueries); ok {
		c.queries = n
	}
}

// adaptiveMap returns a result's metadata.adaptive in memory as a map, nil
// when it is not an object.
func adaptiveMap(v any) map[string]any {
	switch m := v.(type) {
	case nil:
		return nil
	case map[string]any:
		return m
	}
	// Another type (a typed map, a struct): read it as its JSON.
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return decodeAdaptive(b)
}

// rawAdaptive returns metadata.adaptive of a result's metadata as JSON
// text, nil when it has none or it is not an object.
func rawAdaptive(meta []byte) map[string]any {
	if !bytes.Contains(meta, quotedAdaptive) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil || m["adaptive"] == nil {
		return nil
	}
	return decodeAdaptive(m["adaptive"])
}

// decodeAdaptive decodes a JSON object with its numbers as json.Number;
// nil when it is not an object.
func decodeAdaptive(b []byte) map[string]any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil
	}
	return m
}

// metaString returns a metadata value that is a string (of any string
// type; not a JSON number).
func metaString(v any) (string, bool) {
	if v == nil {
		return "", false
	}
	if _, num := v.(json.Number); num {
		return "", false
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return rv.String(), true
	}
	return "", false
}

// metaInt returns a metadata value that is a whole number in [lo, hi]: an
// integer of any type, a float64 (as encoding/json decodes numbers) or a
// json.Number. NaN, infinities, fractions, strings and booleans are not.
func metaInt(v any, lo, hi int64) (int64, bool) {
	var f float64
	switch n := v.(type) {
	case nil:
		return 0, false
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, i >= lo && i <= hi
		}
		x, err := n.Float64()
		if err != nil {
			return 0, false
		}
		f = x
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			i := rv.Int()
			return i, i >= lo && i <= hi
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			u := rv.Uint()
			if u > uint64(hi) {
				return 0, false
			}
			return int64(u), int64(u) >= lo
		case reflect.Float32, reflect.Float64:
			f = rv.Float()
		default:
			return 0, false
		}
	}
	if math.IsNaN(f) || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, false
	}
	return int64(f), true
}

// adaptiveAcc counts the adaptive cells of one defense (or of all).
type adaptiveAcc struct {
	cells, errors, succ int
	unknown             int // successes whose round is not known
	atLimit             int
	rounds              map[int]int   // success round → cells
	queries             map[int64]int // queries to success → cells
}

func (g *adaptiveAcc) add(c *adaptiveCell, judged, success, failed bool) {
	if failed {
		g.errors++
		return
	}
	if !judged {
		return
	}
	g.cells++
	if slices.Contains(stopsAtLimit, c.stop) {
		g.atLimit++
	}
	if !success {
		return
	}
	g.succ++
	if k := c.won(); k > 0 {
		if g.rounds == nil {
			g.rounds = map[int]int{}
		}
		g.rounds[k]++
	} else {
		g.unknown++
	}
	if c.queries >= 0 {
		if g.queries == nil {
			g.queries = map[int64]int{}
		}
		g.queries[c.queries]++
	}
}

// AdaptiveAggregator builds the adaptive-attack section of a report from
// results added one at a time. Per cell it keeps only counts: its memory
// grows with the defenses and with the distinct rounds and query counts
// of successes, not with the cells, and it never keeps a trace.
type AdaptiveAggregator struct {
	seen       bool
	all        adaptiveAcc
	defenses   map[string]*adaptiveAcc
	static     map[string]*[2]int // defense → successes, judged cells of the other attacks
	strategies map[string]int
	stops      map[string]int
	maxRound   int
	limitLo    int // the smallest and largest round limit seen
	limitHi    int
}

// NewAdaptiveAggregator returns an empty aggregator.
func NewAdaptiveAggregator() *AdaptiveAggregator {
	return &AdaptiveAggregator{defenses: map[string]*adaptiveAcc{}, static: map[string]*[2]int{},
		strategies: map[string]int{}, stops: map[string]int{}}
}

// Add counts one result.
func (a *AdaptiveAggregator) Add(r matrix.Result) {
	rec := recordOf(&r)
	a.AddRecord(&rec)
}

// AddRecord counts one result read by Scan (during the Scan callback: an
// adaptive result's metadata is read from its text). Runtime errors are
// counted apart and left out of every rate, as elsewhere; a result of
// another attack counts toward the static success rate of its defense.
func (a *AdaptiveAggregator) AddRecord(r *Record) {
	c, ok := adaptiveOf(r)
	judged, success, failed := r.counts()
	if !ok {
		if judged {
			s := a.static[r.Defense]
			if s == nil {
				s = new([2]int)
				a.static[r.Defense] = s
			}
			s[1]++
			if success {
				s[0]++
			}
		}
		return
	}
	a.seen = true
	a.all.add(&c, judged, success, failed)
	d := a.defenses[r.Defense]
	if d == nil {
		d = &adaptiveAcc{}
		a.defenses[r.Defense] = d
	}
	d.add(&c, judged, success, failed)
	if failed || !judged {
		return
	}
	if c.hasStrategy {
		name := clipN(c.strategy, 200).Text
		if _, known := a.strategies[name]; !known && len(a.strategies) >= maxStrategies {
			name = otherName
		}
		a.strategies[name]++
	}
	switch {
	case c.stop == "":
	case slices.Contains(adaptiveStops, c.stop):
		a.stops[c.stop]++
	default:
		a.stops[otherName]++
	}
	a.maxRound = max(a.maxRound, c.rounds, c.won())
	if c.maxRounds > 0 {
		if a.limitLo == 0 || c.maxRounds < a.limitLo {
			a.limitLo = c.maxRounds
		}
		a.limitHi = max(a.limitHi, c.maxRounds)
	}
}

// AdaptiveSummary is the adaptive-attack section of a report: how soon
// adaptive cells succeed, overall and per defense. Cells counts the judged
// adaptive cells; runtime errors are counted apart and left out of every
// rate.
type AdaptiveSummary struct {
	Cells  int `json:"cells"`
	Errors int `json:"errors"`
	// MaxRound is the most rounds a cell was seen to send (0: no cell
	// says); Rounds are those the tables list: 1 to AdaptiveRoundsShown,
	// then MaxRound.
	MaxRound int   `json:"max_round"`
	Rounds   []int `json:"rounds"`
	// RoundLimit is the smallest and largest max_rounds of the cells (0
	// when none says).
	RoundLimit [2]int `json:"round_limit"`
	// Strategies and Stops count the judged cells by search strategy and
	// by why the search stopped.
	Strategies []NameCount `json:"strategies"`
	Stops      []NameCount `json:"stops"`
	// All covers every adaptive cell; Defenses each defense's, "none"
	// first, then by name.
	All      AdaptiveGroup   `json:"all"`
	Defenses []AdaptiveGroup `json:"defenses"`
}

// NameCount is how many cells have a name.
type NameCount struct {
	Name  string `json:"name"`
	Cells int    `json:"cells"`
}

// AdaptiveGroup is the adaptive cells of one defense (or of all).
type AdaptiveGroup struct {
	Defense string `json:"defense"`
	// ASR is the share of the judged adaptive cells that succeeded.
	ASR    Rate `json:"asr"`
	Errors int  `json:"errors"`
	// Curve is the cumulative success rate by each of the summary's
	// Rounds: a cell that succeeded in round k counts from round k on.
	Curve []RoundRate `json:"by_round"`
	// SuccessRounds counts the successes by the round they came in, with
	// the successes up to that round; ByRound reads it for any round.
	SuccessRounds []RoundCount `json:"success_rounds"`
	// UnknownRound counts successes whose round is not known: in the
	// success rate, not in the curve.
	UnknownRound int `json:"success_round_unknown,omitempty"`
	// RoundsToSuccess and QueriesToSuccess (target model calls up to and
	// including the winning round) are over the successful cells that say.
	RoundsToSuccess  Average `json:"rounds_to_success"`
	QueriesToSuccess Average `json:"queries_to_success"`
	// AtLimit counts the cells whose search ran out of rounds, tokens or
	// budget (stop max_rounds, max_tokens or budget).
	AtLimit int `json:"stopped_at_limit"`
	// Static is the success rate of the other attacks against the same
	// defense (N = 0 when there are none); for All, against the defenses
	// adaptive cells ran against.
	Static Rate `json:"static_asr"`

	all bool
}

// RoundRate is the cumulative success rate by a round.
type RoundRate struct {
	Round int `json:"round"`
	Rate
}

// RoundCount is how many cells first succeeded in a round (Cells), and
// how many had by then (Succeeded).
type RoundCount struct {
	Round     int `json:"round"`
	Cells     int `json:"cells"`
	Succeeded int `json:"succeeded"`
}

// Average is the median and the mean of N whole numbers (both 0 when N is
// 0).
type Average struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
}

// ByRound returns the cumulative success rate by round r: the successes
// that came in round r or before, of every judged cell.
func (g AdaptiveGroup) ByRound(r int) Rate {
	i := sort.Search(len(g.SuccessRounds), func(i int) bool { return g.SuccessRounds[i].Round > r })
	n := 0
	if i > 0 {
		n = g.SuccessRounds[i-1].Succeeded
	}
	return NewRate(n, g.ASR.N)
}

// Summary returns the section for the results added so far; nil when they
// hold no adaptive cell.
func (a *AdaptiveAggregator) Summary() *AdaptiveSummary {
	if a == nil || !a.seen {
		return nil
	}
	s := &AdaptiveSummary{Cells: a.all.cells, Errors: a.all.errors, MaxRound: a.maxRound,
		RoundLimit: [2]int{a.limitLo, a.limitHi}}
	for r := 1; r <= min(a.maxRound, AdaptiveRoundsShown); r++ {
		s.Rounds = append(s.Rounds, r)
	}
	if a.maxRound > AdaptiveRoundsShown {
		s.Rounds = append(s.Rounds, a.maxRound)
	}
	names := make([]string, 0, len(a.defenses))
	for n := range a.defenses {
		names = append(names, n)
	}
	baselineFirst(names)
	var static [2]int
	for _, n := range names {
		g := a.defenses[n].group(n, s.Rounds)
		if st := a.static[n]; st != nil {
			g.Static = NewRate(st[0], st[1])
			static[0], static[1] = static[0]+st[0], static[1]+st[1]
		}
		s.Defenses = append(s.Defenses, g)
	}
	s.All = a.all.group("", s.Rounds)
	s.All.all, s.All.Static = true, NewRate(static[0], static[1])
	for n, c := range a.strategies {
		s.Strategies = append(s.Strategies, NameCount{n, c})
	}
	slices.SortFunc(s.Strategies, func(x, y NameCount) int {
		if x.Cells != y.Cells {
			return y.Cells - x.Cells
		}
		return strings.Compare(x.Name, y.Name)
	})
	for _, n := range append(slices.Clone(adaptiveStops), otherName) {
		if c := a.stops[n]; c > 0 {
			s.Stops = append(s.Stops, NameCount{n, c})
		}
	}
	return s
}

func (g *adaptiveAcc) group(name string, rounds []int) AdaptiveGroup {
	out := AdaptiveGroup{Defense: name, ASR: NewRate(g.succ, g.cells), Errors: g.errors,
		UnknownRound: g.unknown, AtLimit: g.atLimit}
	keys := make([]int, 0, len(g.rounds))
	for k := range g.rounds {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	sum := 0
	for _, k := range keys {
		sum += g.rounds[k]
		out.SuccessRounds = append(out.SuccessRounds, RoundCount{Round: k, Cells: g.rounds[k], Succeeded: sum})
	}
	for _, r := range rounds {
		out.Curve = append(out.Curve, RoundRate{Round: r, Rate: out.ByRound(r)})
	}
	out.RoundsToSuccess = average(g.rounds)
	out.QueriesToSuccess = average(g.queries)
	return out
}

// average returns the median and mean of the values counted in m (value
// → how many times).
func average[K int | int64](m map[K]int) Average {
	keys := make([]K, 0, len(m))
	n := 0
	var sum float64
	for k, c := range m {
		keys = append(keys, k)
		n += c
		sum += float64(k) * float64(c)
	}
	if n == 0 {
		return Average{}
	}
	slices.Sort(keys)
	// The values at 0-based places lo and hi of the sorted list: the
	// middle one, or the middle two.
	lo, hi := (n-1)/2, n/2
	var vlo, vhi float64
	seen := 0
	for _, k := range keys {
		next := seen + m[k]
		if lo >= seen && lo < next {
			vlo = float64(k)
		}
		if hi >= seen && hi < next {
			vhi = float64(k)
			break
		}
		seen = next
	}
	return Average{N: n, Median: (vlo + vhi) / 2, Mean: sum / float64(n)}
}

// The section's layout, shared by text, Markdown and HTML: each format
// passes the escape its output needs.

// name shows a group's name: "all defenses" for All, "(empty)" for a
// defense without a name; long names are cut.
func (g *AdaptiveGroup) name() string {
	switch {
	case g.all:
		return "all defenses"
	case g.Defense == "":
		return "(empty)"
	}
	return shortName(g.Defense, 40).Short
}

// tableGroups are the rows of the queries table: all cells (when there is
// more than one defense), then each defense.
func (s *AdaptiveSummary) tableGroups() []AdaptiveGroup {
	if len(s.Defenses) == 1 {
		return s.Defenses
	}
	return append([]AdaptiveGroup{s.All}, s.Defenses...)
}

// curveGroups are the columns of the success-by-round table, at most
// maxCurveDefenses defenses; hidden counts those left out.
func (s *AdaptiveSummary) curveGroups(limit int) (groups []AdaptiveGroup, hidden int) {
	ds := s.Defenses
	if len(ds) > limit {
		ds, hidden = ds[:limit], len(ds)-limit
	}
	if len(s.Defenses) == 1 {
		return ds, hidden
	}
	return append([]AdaptiveGroup{s.All}, ds...), hidden
}

// hasStatic reports whether any defense was also run with other attacks.
func (s *AdaptiveSummary) hasStatic() bool { return s.All.Static.N > 0 }

// headline says what the section covers: the cells, strategies, round
// limit and stop reasons.
func (s *AdaptiveSummary) headline(esc func(string) string) string {
	parts := []string{plural(s.Cells, "adaptive cell")}
	if s.Errors > 0 {
		parts[0] += " (and " + plural(s.Errors, "runtime error") + ", left out)"
	}
	if len(s.Strategies) > 0 {
		var ss []string
		for _, c := range s.Strategies {
			ss = append(ss, fmt.Sprintf("%s %d", esc(shortName(c.Name, 40).Short), c.Cells))
		}
		parts = append(parts, "strategies: "+strings.Join(ss, ", "))
	}
	if lo, hi := s.RoundLimit[0], s.RoundLimit[1]; hi > 0 {
		if lo == hi {
			parts = append(parts, fmt.Sprintf("max_rounds %d", hi))
		} else {
			parts = append(parts, fmt.Sprintf("max_rounds %d–%d", lo, hi))
		}
	}
	if len(s.Stops) > 0 {
		var ss []string
		for _, c := range s.Stops {
			ss = append(ss, fmt.Sprintf("%s %d", c.Name, c.Cells))
		}
		parts = append(parts, "stopped: "+strings.Join(ss, ", "))
	}
	return strings.Join(parts, " · ")
}

// roundLabel names a row of the success-by-round table.
func (s *AdaptiveSummary) roundLabel(i int) string {
	r := s.Rounds[i]
	if i == AdaptiveRoundsShown {
		return strconv.Itoa(r) + " (last)"
	}
	return strconv.Itoa(r)
}

// curveNotes explain the success-by-round table.
func (s *AdaptiveSummary) curveNotes(hidden int) []string {
	notes := []string{"Cumulative: the share of the adaptive cells that had succeeded by round r (a cell that succeeded in round k counts from round k on), with 95% Wilson intervals; n is the judged cells."}
	if s.MaxRound > AdaptiveRoundsShown+1 {
		notes = append(notes, fmt.Sprintf("Rounds %d to %d are not listed; the last row is the last round seen.", AdaptiveRoundsShown+1, s.MaxRound-1))
	}
	if u := s.All.UnknownRound; u > 0 {
		notes = append(notes, fmt.Sprintf("%s did not record the round of the success: counted in the success rate, not by round.", plural(u, "successful cell")))
	}
	if hidden > 0 {
		notes = append(notes, fmt.Sprintf("%d more %s not shown here; the table below lists every defense.", hidden, pluralWord(hidden, "defense is", "defenses are")))
	}
	return notes
}

const adaptiveTableNote = "Rounds and queries to success are over the successful cells; queries are the target model calls up to and including the winning round. Stopped at limit: the search ran out of rounds, tokens or budget."

// adaptiveNoRounds says why there is no curve.
const adaptiveNoRounds = "No cell says how many rounds it sent (results read from CSV, or without metadata.adaptive): there is no success-by-round curve."

const adaptiveStaticNote = "Static attacks: the success rate of the other (non-adaptive) attacks against the same defense."

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// num formats a median or mean: whole numbers bare, others to one place.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// pair formats median / mean, "—" when there are no values.
func (a Average) pair() string {
	if a.N == 0 {
		return "—"
	}
	return num(a.Median) + " / " + num(a.Mean)
}

// point formats a rate on the curve: "rate (low–high%)".
func point(r Rate) string {
	if r.N == 0 {
		return "—"
	}
	return r.pct() + " (" + r.ci() + ")"
}

// staticText formats a static success rate, "—" when there is none.
func staticText(r Rate) string {
	if r.N == 0 {
		return "—"
	}
	return fmt.Sprintf("%d/%d %s (%s)", r.Successes, r.N, r.pct(), r.ci())
}

// curveHead and curveRows are the success-by-round table's cells.
func (s *AdaptiveSummary) curveTable(esc func(string) string) (head []string, rows [][]string, hidden int) {
	groups, hidden := s.curveGroups(maxCurveDefenses)
	head = []string{"round"}
	for i := range groups {
		head = append(head, fmt.Sprintf("%s (n=%d)", esc(groups[i].name()), groups[i].ASR.N))
	}
	for i := range s.Rounds {
		row := []string{s.roundLabel(i)}
		for _, g := range groups {
			row = append(row, point(g.Curve[i].Rate))
		}
		rows = append(rows, row)
	}
	return head, rows, hidden
}

// queriesTable is the queries-to-success table's cells.
func (s *AdaptiveSummary) queriesTable(esc func(string) string) (head []string, rows [][]string) {
	head = []string{"defense", "adaptive success", "rate", "95% CI", "errors", "rounds to success (median / mean)", "queries to success (median / mean)", "stopped at limit"}
	static := s.hasStatic()
	if static {
		head = append(head, "static attacks")
	}
	for _, g := range s.tableGroups() {
		row := []string{esc(g.name()), fmt.Sprintf("%d/%d", g.ASR.Successes, g.ASR.N), g.ASR.pct(), g.ASR.ci(),
			strconv.Itoa(g.Errors), g.RoundsToSuccess.pair(), g.QueriesToSuccess.pair(), strconv.Itoa(g.AtLimit)}
		if static {
			row = append(row, staticText(g.Static))
		}
		rows = append(rows, row)
	}
	return head, rows
}

// mdCell shows a value from the results in a Markdown table cell.
func mdCell(s string) string { return mdEscape(termsafe.Line(s)) }

// WriteText writes the section as aligned text for a terminal; values from
// the results are shown with termsafe.Line's escapes.
func (s *AdaptiveSummary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "adaptive attacks: %s\n", s.headline(termsafe.Line))
	if len(s.Rounds) > 0 {
		head, rows, hidden := s.curveTable(termsafe.Line)
		fmt.Fprintf(tw, "\nsuccess by round\n%s\n", strings.Join(upperFirst(head), "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, n := range s.curveNotes(hidden) {
			fmt.Fprintln(tw, "  "+n)
		}
	} else if s.Cells > 0 {
		fmt.Fprintln(tw, "  "+adaptiveNoRounds)
	}
	head, rows := s.queriesTable(termsafe.Line)
	fmt.Fprintf(tw, "\nqueries to success\n%s\n", strings.ToUpper(strings.Join(head, "\t")))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(tw, "  "+adaptiveTableNote)
	if s.hasStatic() {
		fmt.Fprintln(tw, "  "+adaptiveStaticNote)
	}
	return tw.Flush()
}

// upperFirst upper-cases the table's first heading (the column's own
// name), leaving the group names as they are.
func upperFirst(head []string) []string {
	out := slices.Clone(head)
	out[0] = strings.ToUpper(out[0])
	return out
}

// WriteMarkdown writes the section as Markdown; values from the results
// are shown with termsafe.Line's escapes and pipes escaped.
func (s *AdaptiveSummary) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### adaptive attacks\n\n%s\n\n", s.headline(mdCell))
	if len(s.Rounds) > 0 {
		head, rows, hidden := s.curveTable(mdCell)
		b.WriteString("#### success by round\n\n")
		writeMarkdownTable(&b, head, rows, "---:", "---:")
		b.WriteString("\n" + strings.Join(s.curveNotes(hidden), " ") + "\n\n")
	} else if s.Cells > 0 {
		b.WriteString(adaptiveNoRounds + "\n\n")
	}
	head, rows := s.queriesTable(mdCell)
	b.WriteString("#### queries to success\n\n")
	writeMarkdownTable(&b, head, rows, "---", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---")
	b.WriteString("\n" + adaptiveTableNote)
	if s.hasStatic() {
		b.WriteString(" " + adaptiveStaticNote)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMarkdownTable writes a table whose columns align as align says (the
// last alignment repeats).
func writeMarkdownTable(b *strings.Builder, head []string, rows [][]string, align ...string) {
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for i := range head {
		b.WriteString(align[min(i, len(align)-1)] + "|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
}

// The HTML view: the same tables, and the curves as inline SVG line
// charts, one small chart per defense so that lines never hide one
// another, drawn with presentation attributes only (the page's style is
// pinned by its Content-Security-Policy, and adding to it would change
// every page).

type htmlAdaptive struct {
	Headline   string
	Panels     []htmlPanel
	PanelNote  string
	CurveHead  []string
	CurveRows  [][]string
	CurveNotes []string
	Head       []string
	Rows       [][]string
	Notes      []string
}

// htmlPanel is the chart of one defense's curve (or of all cells').
type htmlPanel struct {
	htmlName                   // the title: Short shown, Full in the tooltip
	Width, Height              string
	Left, Right, Base, TickEnd string // the plot's edges; where tick marks end
	TitleX, TitleY             string
	YTicks, XTicks             []htmlTick
	AxisX                      htmlPoint
	Line, Band, Ref            string // polyline and polygon points; Ref: all cells' line
	LineTitle                  string
	Marks                      []htmlTick // X, Y and the tooltip in Label
}

type htmlTick struct {
	X, Y, Label string
}

// htmlAdaptiveView is the section as the page shows it: html/template
// escapes markup, and values from the results pass through termsafe.Line,
// so control and bidi characters show as escapes and cannot reorder what
// is read.
func htmlAdaptiveView(s *AdaptiveSummary) *htmlAdaptive {
	if s == nil {
		return nil
	}
	v := &htmlAdaptive{Headline: s.headline(termsafe.Line)}
	if len(s.Rounds) > 0 {
		var hidden int
		v.CurveHead, v.CurveRows, hidden = s.curveTable(termsafe.Line)
		v.CurveNotes = s.curveNotes(hidden)
		v.Panels = htmlPanels(s)
		v.PanelNote = "Each chart is one defense: the line is the cumulative success rate by round, the shaded band its 95% interval"
		if len(s.Defenses) > 1 {
			v.PanelNote += "; the dashed grey line is all defenses together, for comparison"
		}
		v.PanelNote += ". Hover a point for its numbers."
	}
	v.Head, v.Rows = s.queriesTable(termsafe.Line)
	if len(s.Rounds) == 0 && s.Cells > 0 {
		v.CurveNotes = []string{adaptiveNoRounds}
	}
	v.Notes = []string{adaptiveTableNote}
	if s.hasStatic() {
		v.Notes = append(v.Notes, adaptiveStaticNote)
	}
	return v
}

// Panel geometry, in SVG user units.
const (
	panelLeft  = 40
	panelRight = 14
	panelTop   = 28
	panelPlotW = 210
	panelPlotH = 110
	panelRunes = 30 // title length before it is cut
)

// chartRounds are the rounds a chart draws: every one, or evenly spaced
// ones on a long run.
func chartRounds(maxRound int) []int {
	var rounds []int
	if maxRound <= chartEvery {
		for r := 1; r <= maxRound; r++ {
			rounds = append(rounds, r)
		}
		return rounds
	}
	for i := 0; i < chartPoints; i++ {
		r := 1 + int(math.Round(float64(i)*float64(maxRound-1)/(chartPoints-1)))
		if len(rounds) == 0 || rounds[len(rounds)-1] != r {
			rounds = append(rounds, r)
		}
	}
	return rounds
}

// xTicks returns the rounds the x axis labels, about six at most: 1 and
// every step after it (1, 3, 5, …) for a short run, else 1 and the
// multiples of the step (1, 10, 20, …).
func xTicks(maxRound int) []int {
	step := 1
	for _, st := range []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000} {
		step = st
		if maxRound/st <= 6 {
			break
		}
	}
	ticks := []int{1}
	r := step
	if step <= 2 {
		r = 1 + step
	}
	for ; r <= maxRound; r += step {
		ticks = append(ticks, r)
	}
	return ticks
}

func htmlPanels(s *AdaptiveSummary) []htmlPanel {
	groups, _ := s.curveGroups(maxCurveDefenses)
	rounds := chartRounds(s.MaxRound)
	left, top := float64(panelLeft), float64(panelTop)
	base := top + panelPlotH
	x := func(r int) string {
		return px(math.Round(10*(left+(float64(r)-0.5)/float64(s.MaxRound)*panelPlotW)) / 10)
	}
	y := func(v float64) string { return px(math.Round(10*(base-v*panelPlotH)) / 10) }
	line := func(g *AdaptiveGroup, value func(Rate) float64) []string {
		pts := make([]string, 0, len(rounds))
		for _, r := range rounds {
			pts = append(pts, x(r)+","+y(value(g.ByRound(r))))
		}
		return pts
	}
	var ref string
	if len(s.Defenses) > 1 && s.All.ASR.N > 0 {
		ref = strings.Join(line(&s.All, func(r Rate) float64 { return r.Rate }), " ")
	}
	var ticks []htmlTick
	for _, r := range xTicks(s.MaxRound) {
		ticks = append(ticks, htmlTick{X: x(r), Y: px(base + 15), Label: strconv.Itoa(r)})
	}
	var yticks []htmlTick
	for k := 0; k <= 2; k++ {
		yticks = append(yticks, htmlTick{X: px(left - 5), Y: y(float64(k) / 2), Label: strconv.Itoa(50*k) + "%"})
	}
	var out []htmlPanel
	for i := range groups {
		g := &groups[i]
		name := termsafe.Line(g.name())
		full := name
		if !g.all && g.Defense != "" {
			full = termsafe.Line(clipN(g.Defense, 200).Text)
		}
		title := shortName(name, panelRunes)
		p := htmlPanel{
			htmlName: htmlName{Short: fmt.Sprintf("%s (n=%d)", title.Short, g.ASR.N), Full: full},
			Width:    px(left + panelPlotW + panelRight), Height: px(base + 40),
			Left: px(left), Right: px(left + panelPlotW), Base: px(base), TickEnd: px(base + 4),
			TitleX: px(left), TitleY: "16", YTicks: yticks, XTicks: ticks,
			AxisX:     htmlPoint{X: px(left + panelPlotW/2), Y: px(base + 31)},
			LineTitle: name + ": " + g.ASR.String(),
		}
		if g.ASR.N > 0 {
			if !g.all {
				p.Ref = ref
			}
			p.Line = strings.Join(line(g, func(r Rate) float64 { return r.Rate }), " ")
			highs, lows := line(g, func(r Rate) float64 { return r.High }), line(g, func(r Rate) float64 { return r.Low })
			slices.Reverse(lows)
			p.Band = strings.Join(append(highs, lows...), " ")
			if s.MaxRound <= chartEvery {
				for _, r := range rounds {
					rate := g.ByRound(r)
					p.Marks = append(p.Marks, htmlTick{X: x(r), Y: y(rate.Rate), Label: fmt.Sprintf("%s, round %d: %s", name, r, rate.String())})
				}
			}
		}
		out = append(out, p)
	}
	return out
}
