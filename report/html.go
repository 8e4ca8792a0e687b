package report

import (
	"bufio"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// HTMLOptions are the parts of an HTML report that do not come from the
// results.
type HTMLOptions struct {
	// Title heads the page; "" means "pikit report".
	Title string
	// Generated is the time shown as the page's creation time, as the
	// caller formats it ("" shows none). The caller passes it so that the
	// same results always render to the same bytes.
	Generated string
	// Sources names the result files the report was made from.
	Sources []string
	// MaxTraces bounds how many cells the table of cells lists with their
	// traces: 0 means DefaultMaxTraces, a negative number every cell.
	// Beyond it the page shows a sample, and says so; its counts, heatmap
	// and bars always cover every cell.
	MaxTraces int
}

// DefaultMaxTraces is how many cells an HTML report lists with their
// traces unless HTMLOptions.MaxTraces says otherwise: a 100,000-cell run
// makes a page of a few megabytes, not hundreds.
const DefaultMaxTraces = 1000

// MaxHTMLText is how many bytes of one text (a message, a tool result, an
// argument list) the HTML report shows; longer texts are cut on a UTF-8
// boundary with a note saying how much was left out.
const MaxHTMLText = 4000

// WriteHTML writes results as one self-contained HTML page: the totals, the
// outcome counts, an attack × defense heatmap, per-agent and per-channel
// rates with their 95% intervals, and a searchable table of the cells whose
// rows open to the cell's trace. The table lists every cell up to
// MaxTraces (see HTMLOptions); past that, a sample of each attack × defense
// group, and the page says how many of how many it shows.
//
// The page loads nothing: its CSS and its one small script are inline and
// pinned by a Content-Security-Policy that allows nothing else. Every text
// from the results (payloads are hostile by design) goes through
// html/template's contextual escaping and is shown as text, never as markup.
//
// Nothing is embedded twice: a trace that repeats an earlier cell's (the
// repeats of a deterministic cell) links to it, and a long text that occurs
// in several traces (a system prompt, a tool result every defense saw) is
// shown once, among the page's shared texts, with links to it. The page
// reads fully without JavaScript; the script adds the search box and copies
// shared parts into a trace when it is opened.
func WriteHTML(w io.Writer, results []matrix.Result, opts HTMLOptions) error {
	h := NewHTMLReport(opts)
	for i := range results {
		rec := recordOf(&results[i])
		if err := h.Add(&rec); err != nil {
			return err
		}
	}
	return h.Write(w)
}

// HTMLReport builds the page WriteHTML writes from results added one at a
// time (as Scan reads them), so a report of a large file needs neither the
// file's results in memory nor a second read: it keeps exact counts for
// the tables and charts, and the whole result of only the cells the page
// will list.
//
// Which cells are listed does not depend on the order groups first appear:
// with G attack × defense groups so far, each keeps K = max(1, MaxTraces/G)
// cells, successes and runtime errors before the rest, and among those the
// earliest in the input. K only shrinks as groups appear, so the cells kept
// at the end are each group's first K in that order.
type HTMLReport struct {
	opts                        HTMLOptions
	max                         int // MaxTraces; negative: every cell
	all, heat, agents, channels *Aggregator
	groups                      map[string]*[]htmlSample
	perGroup                    int
	cells                       int
	key                         []byte
}

// htmlSample is a cell the page lists.
type htmlSample struct {
	index int // 1-based place among the results added
	rank  int // 0 for a success or a runtime error, 1 for the rest
	res   matrix.Result
}

// NewHTMLReport returns an empty report.
func NewHTMLReport(opts HTMLOptions) *HTMLReport {
	h := &HTMLReport{opts: opts, max: opts.MaxTraces,
		all: NewAggregator().TrackAdaptive(), heat: NewAggregator("attack", "defense"),
		agents: NewAggregator("agent"), channels: NewAggregator("channel"),
		groups: map[string]*[]htmlSample{}}
	if h.max == 0 {
		h.max = DefaultMaxTraces
	}
	h.perGroup = h.max
	return h
}

// Add counts a result and, when the page will list it, keeps the whole
// result (decoding it with r.Result). An error is a result that does not
// decode.
func (h *HTMLReport) Add(r *Record) error {
	h.cells++
	h.all.AddRecord(r)
	h.heat.AddRecord(r)
	h.agents.AddRecord(r)
	h.channels.AddRecord(r)
	h.key = append(append(append(h.key[:0], r.Attack...), 0), r.Defense...)
	g := h.groups[string(h.key)]
	if g == nil {
		g = new([]htmlSample)
		h.groups[string(h.key)] = g
		if h.max > 0 {
			if k := max(1, h.max/len(h.groups)); k < h.perGroup {
				h.perGroup = k
				for _, other := range h.groups {
					if len(*other) > k {
						clear((*other)[k:])
						*other = (*other)[:k]
					}
				}
			}
		}
	}
	judged, success, failed := r.counts()
	rank := 1
	if (judged && success) || failed {
		rank = 0
	}
	s := *g
	if h.max > 0 && len(s) >= h.perGroup {
		if rank >= s[len(s)-1].rank {
			return nil // no better than what the group keeps
		}
		s = s[:len(s)-1]
	}
	res, err := r.Result()
	if err != nil {
		return dataErrorf(r.file, r.Line, err, "not a result")
	}
	// The new cell comes after every kept one of its rank or better.
	at := len(s)
	for at > 0 && s[at-1].rank > rank {
		at--
	}
	s = slices.Insert(s, at, htmlSample{index: h.cells, rank: rank, res: res})
	*g = s
	return nil
}

// Write writes the page.
func (h *HTMLReport) Write(w io.Writer) error {
	var samples []htmlSample
	for _, g := range h.groups {
		samples = append(samples, *g...)
	}
	slices.SortFunc(samples, func(a, b htmlSample) int { return a.index - b.index })
	p := h.page(samples)
	bw := bufio.NewWriterSize(w, 256<<10)
	if err := htmlTemplate().Execute(bw, p); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return bw.Flush()
}

// The page's view model: everything the template shows, computed in Go so
// the template only lays it out.

type htmlPage struct {
	Title, Generated string
	Sources          []string
	Cells            int
	ASR              string
	Errors           int
	NotJudged        int
	ToolWarning      string // Summary.ToolErrorWarning, "" for none
	Outcomes         []htmlOutcome
	Heat             htmlHeatmap
	Agents           []htmlBar
	Channels         []htmlBar
	Adaptive         *htmlAdaptive // nil without adaptive cells
	Rows             []htmlRow
	Shared           []htmlClip
	// Sampled is set when Rows is a sample of the cells: PerGroup of each
	// attack × defense group at most.
	Sampled  bool
	PerGroup int
}

type htmlOutcome struct {
	Name    string
	Count   int
	Share   string
	Class   string
	Counted string // how the outcome counts toward the ASR
}

// htmlClip is a text cut to MaxHTMLText bytes; More is how many bytes were
// cut off (0 when none). A text shared by several places of the page is
// shown once, in the shared texts; its other places hold only Ref, its
// 1-based number there.
type htmlClip struct {
	Text  string
	More  int
	Total int
	Ref   int
}

// clip shows a text of a trace on the page: cut to MaxHTMLText (see
// htmlClipN).
func clip(s string) htmlClip {
	return htmlClipN(s, MaxHTMLText)
}

// htmlClipN shows a text from the results on the page: cut to max bytes,
// then with termsafe.String's escapes, as the adaptive section shows its
// values: bidi overrides, embeddings and isolates, terminal escapes and
// other controls and invisible format characters show as \uXXXX or \xNN
// (html/template escapes markup, not these). Newlines and tabs stay.
func htmlClipN(s string, max int) htmlClip {
	c := clipN(s, max)
	c.Text = termsafe.String(c.Text)
	return c
}

// htmlLine shows a one-line value (a name, a key, an outcome) on the page:
// cut to max bytes, with termsafe.Line's escapes (newlines and tabs too).
func htmlLine(s string, max int) string {
	return termsafe.Line(clipN(s, max).Text)
}

func clipN(s string, max int) htmlClip {
	c := htmlClip{Text: s, Total: len(s)}
	if len(s) > max {
		c.Text = textcut.Prefix(s, max)
		c.More = len(s) - len(c.Text)
	}
	c.Text = strings.ToValidUTF8(c.Text, "\uFFFD")
	return c
}

// htmlName is a short label (an axis value) for places with little room:
// Short is shown, Full goes in the tooltip.
type htmlName struct {
	Short, Full string
}

func shortName(s string, runes int) htmlName {
	full := clipN(s, 200).Text
	short := full
	if utf8.RuneCountInString(full) > runes {
		r := []rune(full)
		short = string(r[:runes-1]) + "…"
	}
	// Cut, then escaped (termsafe.Line, as htmlLine).
	return htmlName{Short: termsafe.Line(short), Full: termsafe.Line(full)}
}

// Heatmap geometry, in SVG user units (CSS pixels).
const (
	heatCellW  = 64
	heatCellH  = 40
	heatLabelW = 190 // attack labels, left
	heatGap    = 8
	heatRunes  = 26 // label length before it is cut
)

type htmlHeatmap struct {
	Width, Height string
	Attacks       []htmlAxisLabel
	Defenses      []htmlAxisLabel
	Cells         []htmlHeatCell
	Legend        []htmlLegendStep
	AxisX, AxisY  htmlPoint // positions of the axis titles
	LegendY       string
	LegendTextY   string
	Empty         bool
}

type htmlPoint struct{ X, Y string }

type htmlAxisLabel struct {
	htmlName
	X, Y string
}

type htmlHeatCell struct {
	X, Y, W, H     string
	TX, TY1, TY2   string // text anchor and baselines
	Fill, Ink      string
	Rate, N, Title string
	Class          string
}

type htmlLegendStep struct {
	X, Fill, Label, LabelX string
}

type htmlBar struct {
	Name       htmlName
	Rate       string // "42.0%" or "—"
	Count      string // "5/12"
	CI         string // "19.3–68.1%"
	Errors     int
	ErrorsText string // "1 runtime error"
	Fill       string // bar width in the 0–100 viewBox
	Lo, Hi     string
	HasData    bool
	Title      string
}

// htmlRow is one result: its table row and the head of its trace view.
type htmlRow struct {
	Index                                         int
	Case, Agent, Attack, Defense, Channel, Target string
	Outcome                                       string
	OutcomeClass                                  string
	Success                                       bool
	Reason                                        htmlClip
	Summary                                       string
	Key, Description                              string
	Repeat                                        int
	LatencyMS                                     int64
	Tokens                                        string
	// Trace is the trace view; nil when it is the same as row SameAs's,
	// which then has Anchor set so it can be linked to.
	Trace  *htmlTrace
	SameAs int
	Anchor bool
}

// htmlTrace is what a cell's trace shows beyond the cell's own fields.
type htmlTrace struct {
	Task         string
	Confidence   string
	Signals      []string
	HasTrace     bool
	System       *htmlClip
	Steps        []htmlStep
	Sinks        []htmlSink
	Blocked      *agent.Block
	BlockedScore string
	MaxStepsHit  bool
	Final        *htmlClip // shown only when no step already shows it
	Evidence     []judge.Evidence
	Error        *htmlClip
	// Rounds are an adaptive search's attempts (the first maxHTMLRounds),
	// MoreRounds how many more there were.
	Rounds     []htmlRound
	MoreRounds int
}

// htmlRound is one attempt of an adaptive search.
type htmlRound struct {
	Round    int
	Operator string
	Outcome  string
	Class    string
	Pruned   string
	Prompt   htmlClip
}

// maxHTMLRounds bounds the attempts a trace lists.
const maxHTMLRounds = 50

type htmlStep struct {
	Index     int
	Kind      string
	Class     string
	Text      *htmlClip
	Calls     []htmlCall
	Tool      string
	CallID    string
	Arguments *htmlClip
	Result    *htmlClip
	Tainted   bool
	Sink      bool
	SinkFired bool
	Blocked   bool
	Error     *htmlClip
}

type htmlCall struct {
	Name, ID  string
	Arguments *htmlClip // shown only when no tool step shows the call
}

type htmlSink struct {
	Tool      string
	Step      int
	Arguments *htmlClip // shown only when the sink's step is not in the trace
}

func (h *HTMLReport) page(samples []htmlSample) *htmlPage {
	opts := h.opts
	p := &htmlPage{Title: opts.Title, Generated: opts.Generated}
	for _, src := range opts.Sources {
		p.Sources = append(p.Sources, termsafe.Line(src))
	}
	if p.Title == "" {
		p.Title = "pikit report"
	}
	sum := h.all.Summary()
	p.Cells, p.Errors, p.NotJudged = sum.Cells, sum.Errors, sum.NotJudged
	p.ASR = sum.ASR.String()
	if w := sum.ToolErrorWarning(); w != "" {
		p.ToolWarning = "Warning: " + w + "."
	}
	p.Outcomes = htmlOutcomes(sum)
	p.Heat = htmlHeat(h.heat.Summary())
	p.Agents = htmlBars(h.agents.Summary())
	p.Channels = htmlBars(h.channels.Summary())
	p.Adaptive = htmlAdaptiveView(sum.Adaptive)
	if len(samples) < h.cells {
		p.Sampled, p.PerGroup = true, h.perGroup
	}

	// Two passes. The first finds the traces that repeat an earlier one
	// (repeats of a deterministic cell) and counts the long texts of the
	// others; the second shows each repeated trace once, each text that
	// occurs more than once in the shared texts only, and everything else
	// in place.
	b := &pageBuilder{pool: textPool{counting: true, counts: map[string]int{}}, first: map[[32]byte]int{}, anchors: map[int]bool{}}
	fps := make([][32]byte, len(samples))
	for i := range samples {
		r, index := &samples[i].res, samples[i].index
		if r.TraceData == nil {
			b.pool.trace(r)
			continue
		}
		fps[i] = traceFingerprint(r)
		if j, ok := b.first[fps[i]]; ok {
			b.anchors[j] = true
			continue
		}
		b.first[fps[i]] = index
		b.pool.trace(r)
	}
	b.pool.ids, b.pool.counting = map[string]int{}, false
	p.Rows = make([]htmlRow, len(samples))
	for i := range samples {
		r, index := &samples[i].res, samples[i].index
		row := htmlResultRow(index, r)
		if j := b.first[fps[i]]; r.TraceData != nil && j != index {
			row.SameAs = j
		} else {
			row.Trace, row.Anchor = b.pool.trace(r), b.anchors[index]
		}
		p.Rows[i] = row
	}
	p.Shared = b.pool.texts
	return p
}

type pageBuilder struct {
	pool    textPool
	first   map[[32]byte]int // trace fingerprint → the first row showing it
	anchors map[int]bool     // rows other rows refer to
}

// traceFingerprint identifies what a result's trace view shows.
func traceFingerprint(r *matrix.Result) [32]byte {
	b, err := json.Marshal(struct {
		Trace                   *agent.Trace
		Evidence                []judge.Evidence
		Signals                 []string
		Task, Confidence, Final string
		Error                   string
	}{r.TraceData, r.Evidence, r.Signals, r.Task, r.Confidence, r.FinalText, r.Error})
	if err != nil {
		// Unencodable (NaN arguments): never the same as another trace.
		b = fmt.Appendf(nil, "%p", r)
	}
	return sha256.Sum256(b)
}

// minShared is the length from which a text that occurs more than once is
// shown once, in the shared texts: a reference costs about this much.
const minShared = 100

// textPool makes the texts of the trace views, each long one that occurs
// more than once (a system prompt, a tool result seen by every defense and
// repeat, a model's echo) going to the page only once.
type textPool struct {
	counting bool
	counts   map[string]int
	ids      map[string]int
	texts    []htmlClip
}

// text returns how s is shown (nil for ""), counting it in the first pass.
func (tp *textPool) text(s string) *htmlClip {
	if s == "" {
		return nil
	}
	if len(s) >= minShared {
		if tp.counting {
			tp.counts[s]++
		} else if tp.counts[s] > 1 {
			id, ok := tp.ids[s]
			if !ok {
				tp.texts = append(tp.texts, clip(s))
				id = len(tp.texts)
				tp.ids[s] = id
			}
			c := tp.texts[id-1]
			return &htmlClip{Ref: id, More: c.More, Total: c.Total}
		}
	}
	c := clip(s)
	return &c
}

func htmlOutcomes(sum Summary) []htmlOutcome {
	var out []htmlOutcome
	add := func(o judge.Outcome, c int) {
		ho := htmlOutcome{Name: htmlLine(string(o), 200), Count: c, Class: outcomeClass(o, o.Success())}
		if sum.Cells > 0 {
			ho.Share = fmt.Sprintf("%.1f%%", 100*float64(c)/float64(sum.Cells))
		}
		switch {
		case o == judge.RuntimeError || o == judge.NotJudged:
			ho.Counted = "excluded"
		case o.Success():
			ho.Counted = "success"
		case o.Valid():
			ho.Counted = "failure"
		default:
			ho.Counted = "unknown outcome; counted by its success field"
		}
		out = append(out, ho)
	}
	for _, o := range judge.Outcomes {
		if c := sum.Outcomes[o]; c > 0 {
			add(o, c)
		}
	}
	var unknown []string
	for o, c := range sum.Outcomes {
		if !o.Valid() && c > 0 {
			unknown = append(unknown, string(o))
		}
	}
	sort.Strings(unknown)
	for _, o := range unknown {
		add(judge.Outcome(o), sum.Outcomes[judge.Outcome(o)])
	}
	return out
}

func outcomeClass(o judge.Outcome, success bool) string {
	switch {
	case o == judge.RuntimeError:
		return "o-err"
	case o == judge.NotJudged:
		return "o-nj"
	case success:
		return "o-hit"
	}
	return "o-miss"
}

// baselineFirst sorts names with the baseline method "none" first and the
// rest by name.
func baselineFirst(names []string) {
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "none") != (names[j] == "none") {
			return names[i] == "none"
		}
		return names[i] < names[j]
	})
}

func px(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }

func ciText(r Rate) string {
	return fmt.Sprintf("%.1f–%.1f%%", 100*r.Low, 100*r.High)
}

// heatColor maps a rate in [0, 1] to a white → red scale (ColorBrewer
// Reds), with the ink that stays readable on it.
func heatColor(t float64) (fill, ink string) {
	t = math.Max(0, math.Min(1, t))
	stops := [][3]float64{{255, 255, 255}, {252, 174, 145}, {222, 45, 38}, {140, 10, 20}}
	seg := t * float64(len(stops)-1)
	i := int(seg)
	if i >= len(stops)-1 {
		i = len(stops) - 2
	}
	f := seg - float64(i)
	var c [3]int
	for k := range c {
		c[k] = int(math.Round(stops[i][k] + f*(stops[i+1][k]-stops[i][k])))
	}
	ink = "#111"
	if t > 0.55 {
		ink = "#fff"
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2]), ink
}

func htmlHeat(s Summary) htmlHeatmap {
	var h htmlHeatmap
	groups := map[[2]string]Group{}
	seenA, seenD := map[string]bool{}, map[string]bool{}
	var attacks, defenses []string
	for _, g := range s.Groups {
		a, d := g.Values[0], g.Values[1]
		groups[[2]string{a, d}] = g
		if !seenA[a] {
			seenA[a] = true
			attacks = append(attacks, a)
		}
		if !seenD[d] {
			seenD[d] = true
			defenses = append(defenses, d)
		}
	}
	baselineFirst(attacks)
	baselineFirst(defenses)
	if len(attacks) == 0 {
		h.Empty = true
		return h
	}
	// Column labels are rotated 45°, so their height is about their
	// length × 0.7 × the width of a character.
	longest := 0
	for _, d := range defenses {
		longest = max(longest, utf8.RuneCountInString(shortName(d, heatRunes).Short))
	}
	top := 24 + math.Ceil(float64(longest)*6.5*0.72)
	left := float64(heatLabelW)
	for j, d := range defenses {
		x := left + float64(j)*heatCellW + heatCellW/2
		h.Defenses = append(h.Defenses, htmlAxisLabel{htmlName: shortName(d, heatRunes), X: px(x), Y: px(top - 6)})
	}
	for i, a := range attacks {
		y := top + float64(i)*heatCellH + heatCellH/2 + 4
		h.Attacks = append(h.Attacks, htmlAxisLabel{htmlName: shortName(a, heatRunes), X: px(left - heatGap), Y: px(y)})
		for j, d := range defenses {
			x, y := left+float64(j)*heatCellW, top+float64(i)*heatCellH
			c := htmlHeatCell{
				X: px(x + 1), Y: px(y + 1), W: px(heatCellW - 2), H: px(heatCellH - 2),
				TX: px(x + heatCellW/2), TY1: px(y + 17), TY2: px(y + 31),
				Class: "cell",
			}
			name := htmlLine(a, 200) + " × " + htmlLine(d, 200)
			g, ok := groups[[2]string{a, d}]
			switch {
			case !ok:
				c.Fill, c.Ink, c.Rate, c.Title = "#eeeeee", "#555", "—", name+": no cells"
				c.Class = "cell none"
			case g.ASR.N == 0:
				c.Fill, c.Ink, c.Rate, c.N = "#eeeeee", "#555", "—", "n=0"
				c.Title = name + ": no judged cells; " + plural(g.Errors, "runtime error")
				c.Class = "cell none"
			default:
				c.Fill, c.Ink = heatColor(g.ASR.Rate)
				c.Rate = fmt.Sprintf("%.0f%%", 100*g.ASR.Rate)
				c.N = "n=" + strconv.Itoa(g.ASR.N)
				c.Title = name + ": " + g.ASR.String()
				if g.Errors > 0 {
					c.Title += "; " + plural(g.Errors, "runtime error") + " excluded"
				}
			}
			h.Cells = append(h.Cells, c)
		}
	}
	gridW := float64(len(defenses)) * heatCellW
	bottom := top + float64(len(attacks))*heatCellH
	h.AxisX = htmlPoint{X: px(left + gridW/2), Y: px(bottom + 20)}
	h.AxisY = htmlPoint{X: "12", Y: px(top + float64(len(attacks))*heatCellH/2)}
	// The legend: ten steps of the scale under the grid.
	const steps, stepW = 10, 22
	ly := bottom + 32
	h.LegendY, h.LegendTextY = px(ly), px(ly+26)
	for k := 0; k <= steps; k++ {
		fill, _ := heatColor(float64(k) / steps)
		x := left + float64(k)*stepW
		st := htmlLegendStep{X: px(x), Fill: fill}
		if k%5 == 0 {
			st.Label, st.LabelX = strconv.Itoa(k*10)+"%", px(x+stepW/2)
		}
		h.Legend = append(h.Legend, st)
	}
	labelW := float64(longest) * 6.5 * 0.72
	width := math.Max(left+gridW-heatCellW/2+labelW, left+float64(steps+1)*stepW) + 16
	h.Width, h.Height = px(width), px(ly+36)
	return h
}

func htmlBars(s Summary) []htmlBar {
	var out []htmlBar
	for _, g := range s.Groups {
		r := g.ASR
		b := htmlBar{Name: shortName(g.Values[0], 40), Errors: g.Errors, ErrorsText: plural(g.Errors, "runtime error"), Count: fmt.Sprintf("%d/%d", r.Successes, r.N)}
		if r.N > 0 {
			b.HasData = true
			b.Rate, b.CI = pct(r.Rate), ciText(r)
			b.Fill, b.Lo, b.Hi = px(math.Round(1000*r.Rate)/10), px(math.Round(1000*r.Low)/10), px(math.Round(1000*r.High)/10)
			b.Title = b.Name.Full + ": " + r.String()
		} else {
			b.Rate, b.CI = "—", "—"
			b.Title = b.Name.Full + ": no judged cells"
		}
		if g.Errors > 0 {
			b.Title += "; " + plural(g.Errors, "runtime error") + " excluded"
		}
		out = append(out, b)
	}
	return out
}

// htmlResultRow makes the table row of a result and the cell fields its
// trace view starts with.
func htmlResultRow(i int, r *matrix.Result) htmlRow {
	row := htmlRow{
		Index: i, Case: htmlLine(r.CaseID, 200), Agent: htmlLine(r.Agent, 200),
		Attack: htmlLine(r.Attack, 200), Defense: htmlLine(r.Defense, 200),
		Channel: htmlLine(Field(*r, "channel"), 200), Target: htmlLine(r.Target, 200),
		Outcome: htmlLine(string(r.Outcome), 200), OutcomeClass: outcomeClass(r.Outcome, r.Success),
		Success: r.Success, Reason: clip(r.Reason),
		Key: htmlLine(r.Key, 200), Description: clip(r.CaseDescription).Text,
		Repeat: r.RepeatIndex, LatencyMS: r.LatencyMS,
	}
	if r.Usage.PromptTokens+r.Usage.CompletionTokens > 0 {
		row.Tokens = fmt.Sprintf("%d in, %d out", r.Usage.PromptTokens, r.Usage.CompletionTokens)
	}
	var parts []string
	if tr := r.TraceData; tr != nil {
		parts = append(parts, plural(len(tr.Steps), "step"))
		if n := len(tr.SinkCalls); n > 0 {
			parts = append(parts, plural(n, "sink")+" fired")
		}
		if tr.TaintDelivered {
			parts = append(parts, "payload delivered")
		}
		if tr.Blocked != nil {
			parts = append(parts, "blocked")
		}
	} else {
		parts = append(parts, "no trace")
	}
	if r.Error != "" {
		parts = append(parts, "error")
	}
	row.Summary = strings.Join(parts, " · ")
	return row
}

// trace makes the trace view of a result.
func (tp *textPool) trace(r *matrix.Result) *htmlTrace {
	v := &htmlTrace{Task: clip(r.Task).Text, Confidence: htmlLine(r.Confidence, 200), Error: tp.text(r.Error)}
	for _, s := range r.Signals {
		v.Signals = append(v.Signals, htmlLine(s, 200))
	}
	for _, e := range r.Evidence {
		e.Signal, e.Detail = htmlLine(e.Signal, 200), clip(e.Detail).Text
		v.Evidence = append(v.Evidence, e)
	}
	final := r.FinalText
	tr := r.TraceData
	if tr == nil {
		v.Final = tp.text(final)
		return v
	}
	v.HasTrace = true
	for i, rd := range tr.Rounds {
		if i == maxHTMLRounds {
			v.MoreRounds = len(tr.Rounds) - i
			break
		}
		hr := htmlRound{Round: rd.Round, Operator: htmlLine(rd.Operator, 200), Pruned: htmlClipN(rd.Pruned, 300).Text, Prompt: htmlClipN(rd.Prompt, 600)}
		if rd.Pruned == "" {
			hr.Outcome = htmlLine(rd.Outcome, 60)
			hr.Class = outcomeClass(judge.Outcome(rd.Outcome), rd.Success)
		}
		v.Rounds = append(v.Rounds, hr)
	}
	v.System = tp.text(tr.System)
	if final == "" {
		final = tr.FinalText
	}
	v.MaxStepsHit = tr.MaxStepsHit
	if tr.Blocked != nil {
		b := *tr.Blocked
		b.Point, b.Detector, b.Reason = htmlLine(b.Point, 200), htmlLine(b.Detector, 200), clip(b.Reason).Text
		v.Blocked, v.BlockedScore = &b, strconv.FormatFloat(b.Score, 'f', 2, 64)
	}
	// Tool calls are shown with their arguments at the tool step that ran
	// them, sink calls at their step: each text appears once.
	ran := map[[2]string]bool{}
	steps := map[int]bool{}
	fired := map[int]bool{}
	for _, sc := range tr.SinkCalls {
		fired[sc.Step] = true
	}
	for _, s := range tr.Steps {
		steps[s.Index] = true
		if s.Kind == agent.StepTool {
			ran[[2]string{s.CallID, s.Tool}] = true
		}
	}
	lastModel := ""
	for _, s := range tr.Steps {
		hs := htmlStep{
			Index: s.Index, Kind: htmlLine(s.Kind, 40), Class: "k-other",
			Tainted: s.Tainted, Blocked: s.Blocked, Sink: s.Sink, SinkFired: s.Sink && fired[s.Index],
			Error: tp.text(s.Error), Text: tp.text(s.Text),
		}
		switch s.Kind {
		case agent.StepUser:
			hs.Class = "k-user"
		case agent.StepModel:
			hs.Class = "k-model"
			lastModel = s.Text
		case agent.StepTool:
			hs.Class = "k-tool"
		}
		for _, c := range s.ToolCalls {
			hc := htmlCall{Name: htmlLine(c.Name, 200), ID: htmlLine(c.ID, 200)}
			if !ran[[2]string{c.ID, c.Name}] {
				hc.Arguments = tp.text(c.Arguments)
			}
			hs.Calls = append(hs.Calls, hc)
		}
		if s.Kind == agent.StepTool || s.Tool != "" {
			hs.Tool, hs.CallID = htmlLine(s.Tool, 200), htmlLine(s.CallID, 200)
			hs.Arguments, hs.Result = tp.text(s.Arguments), tp.text(s.Result)
		}
		v.Steps = append(v.Steps, hs)
	}
	for _, sc := range tr.SinkCalls {
		hs := htmlSink{Tool: htmlLine(sc.Tool, 200), Step: sc.Step}
		if !steps[sc.Step] {
			hs.Arguments = tp.text(jsonText(sc.Arguments))
		}
		v.Sinks = append(v.Sinks, hs)
	}
	if final != lastModel {
		v.Final = tp.text(final)
	}
	return v
}

// jsonText encodes v as compact JSON without HTML escapes (the template
// escapes what it shows), so arguments read as the model wrote them.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// The page's assets, embedded: its only style (report.css) and script
// (report.js), the page's template (report.html.tmpl) and its adaptive
// section's (adaptive.html.tmpl, which must add nothing outside its
// definition). The page's Content-Security-Policy allows exactly that
// style and script by the hashes of these same bytes, so neither may hold
// a comment (html/template strips comments, which would change the
// hash). The script adds the search box, and when a trace is opened
// copies in the parts it shares with other cells: a trace that repeats an
// earlier cell's, and the shared texts.
//
//go:embed assets
var assets embed.FS

func asset(name string) string {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic(err) // embedded at build time: the tests read every one
	}
	return string(b)
}

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// htmlCSP allows the page's own style and script and nothing else: no
// loads of any kind, no other inline script, no forms, no base URL.
func htmlCSP(css, script string) string {
	return "default-src 'none'; style-src " + cspHash(css) + "; script-src " + cspHash(script) +
		"; img-src 'none'; base-uri 'none'; form-action 'none'"
}

// htmlTemplate is the page's template, parsed on first use. Its own text
// is trusted; the CSP, the style and the script are put in before
// parsing, so no value from the results is ever part of it.
var htmlTemplate = sync.OnceValue(func() *template.Template {
	css, script := asset("report.css"), asset("report.js")
	page := strings.NewReplacer("@CSP@", htmlCSP(css, script), "@CSS@", css, "@SCRIPT@", script).Replace(asset("report.html.tmpl"))
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"inc": func(i int) int { return i + 1 },
	}).Parse(page + asset("adaptive.html.tmpl")))
})
