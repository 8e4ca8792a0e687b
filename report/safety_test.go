package report

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

func TestNeutralizeCSV(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"naive", "naive"},
		{"=1+1", "'=1+1"},
		{`=HYPERLINK("http://x","y")`, `'=HYPERLINK("http://x","y")`},
		{"+cmd", "'+cmd"},
		{"-cmd|' /C calc'!A0", "'-cmd|' /C calc'!A0"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\t=1", "'\t=1"},
		{"\r=1", "'\r=1"},
		{"a=1", "a=1"},
		{" =1", " =1"},
		// Plain numbers are numbers, not formulas.
		{"-0.25", "-0.25"},
		{"+3", "+3"},
		{"-7", "-7"},
		{"-1e-3", "-1e-3"},
		{"-.5", "-.5"},
		{"-", "'-"},
		{"-1+2", "'-1+2"},
		{"-1e", "'-1e"},
		{"-Inf", "'-Inf"},
	}
	for _, tt := range tests {
		if got := NeutralizeCSV(tt.in); got != tt.want {
			t.Errorf("NeutralizeCSV(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCSVFormulas: the results and summary CSV writers neutralise
// formulas by default and not when raw; reading undoes nothing.
func TestCSVFormulas(t *testing.T) {
	res := []matrix.Result{{Key: "k1", Attack: "=cmd()", Defense: "@x", Reason: "-2+3", FinalText: "+1", Task: "\tx",
		Outcome: judge.FullSuccess, Success: true, Seed: -5, LatencyMS: 3}}
	write := func(o CSVOptions) string {
		var buf bytes.Buffer
		w := NewCSVWriter(&buf, o)
		if err := w.Write(res[0]); err != nil {
			t.Fatal(err)
		}
		w.Close()
		return buf.String()
	}
	safe, raw := write(CSVOptions{}), write(CSVOptions{Raw: true})
	for _, w := range []string{"'=cmd()", "'@x", "'-2+3", ",+1,", ",'\tx,", ",-5,"} {
		if !strings.Contains(safe, w) {
			t.Errorf("safe CSV lacks %q:\n%s", w, safe)
		}
	}
	var def bytes.Buffer
	w := NewCSV(&def)
	w.Write(res[0])
	w.Close()
	if def.String() != safe {
		t.Error("NewCSV is not the safe default")
	}
	if strings.Contains(raw, "'") {
		t.Errorf("raw CSV changed cells:\n%s", raw)
	}
	for _, tt := range []struct{ text, attack string }{{safe, "'=cmd()"}, {raw, "=cmd()"}} {
		back, err := ReadCSV(strings.NewReader(tt.text))
		if err != nil || len(back) != 1 || back[0].Attack != tt.attack || back[0].Seed != -5 {
			t.Errorf("read back: %+v, %v; want attack %q", back, err, tt.attack)
		}
	}
	// The summary CSV: group values neutralised, numbers left alone.
	s := Summarize(append(res, matrix.Result{Attack: "-3", Outcome: judge.Refused}), "attack")
	var sb, rb bytes.Buffer
	if err := s.WriteCSV(&sb); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteCSVWith(&rb, CSVOptions{Raw: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "\n'=cmd(),1,1,") || !strings.Contains(sb.String(), "\n-3,0,1,") {
		t.Errorf("summary CSV:\n%s", sb.String())
	}
	if !strings.Contains(rb.String(), "\n=cmd(),1,1,") {
		t.Errorf("raw summary CSV:\n%s", rb.String())
	}
	// Create's CSV files are safe; CreateWith can make them raw.
	dir := t.TempDir()
	for _, o := range []CSVOptions{{}, {Raw: true}} {
		path := fmt.Sprintf("%s/r-%v.csv", dir, o.Raw)
		f, err := CreateWith(path, false, o)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(res[0])
		f.Close()
		back, err := ReadFile(path)
		if want := map[bool]string{false: "'=cmd()", true: "=cmd()"}[o.Raw]; err != nil || back[0].Attack != want {
			t.Errorf("CreateWith(%+v): %q, %v", o, back[0].Attack, err)
		}
	}
}

// TestNoDataNoInterval: a rate over no judged cells shows "—", never the
// interval (0, 1) it formally has.
func TestNoDataNoInterval(t *testing.T) {
	if got := NewRate(0, 0).String(); got != "0/0 (—)" {
		t.Errorf("Rate.String() = %q", got)
	}
	res := []matrix.Result{
		{Attack: "naive", Outcome: judge.FullSuccess, Success: true},
		{Attack: "broken", Outcome: judge.RuntimeError, Error: "x"},
	}
	s := Summarize(res, "attack")
	var txt, md bytes.Buffer
	s.WriteText(&txt)
	s.WriteMarkdown(&md)
	for name, out := range map[string]string{"text": txt.String(), "markdown": md.String()} {
		if strings.Contains(out, "0.0–100.0") || !strings.Contains(out, "—") {
			t.Errorf("%s shows an interval for n = 0:\n%s", name, out)
		}
	}
	var empty bytes.Buffer
	Summarize(nil).WriteText(&empty)
	if !strings.Contains(empty.String(), "attack success  0/0 (—)") {
		t.Errorf("empty summary:\n%s", empty.String())
	}
}

// TestTextOutputsTerminalSafe: text and Markdown summaries show values
// from the results escaped.
func TestTextOutputsTerminalSafe(t *testing.T) {
	bad := "\x1b[2J\x1b]52;c;ZXZpbA==\x07\r\u009b31m\u202eevil\ttab\nline"
	res := []matrix.Result{
		{Attack: bad, Defense: bad, Outcome: judge.Outcome(bad), Success: true},
		{Attack: "naive", Outcome: "", Reason: "x"},
	}
	s := Summarize(res, "attack", "defense", "outcome")
	var txt, md, groups bytes.Buffer
	s.WriteText(&txt)
	s.WriteMarkdown(&md)
	s.WriteGroupsText(&groups)
	for name, out := range map[string]string{"text": txt.String(), "markdown": md.String(), "groups": groups.String()} {
		for _, u := range []string{"\x1b", "\x07", "\r", "\u009b", "\u202e", "\ttab", "\nline"} {
			if strings.Contains(out, u) {
				t.Errorf("%s: %q reached the output:\n%q", name, u, out)
			}
		}
		if !strings.Contains(out, `\x1b[2J`) {
			t.Errorf("%s: the value is not shown escaped:\n%s", name, out)
		}
	}
	if !strings.Contains(txt.String(), "(no outcome) 1") {
		t.Errorf("a result without an outcome is not named:\n%s", txt.String())
	}
}

func TestGateEmpty(t *testing.T) {
	errored := []matrix.Result{{Attack: "naive", Defense: "none", Outcome: judge.RuntimeError, Error: "x"}}
	benign := []matrix.Result{{Attack: "none", Defense: "none", Outcome: judge.NotReached},
		{Attack: "naive", Defense: "none", Outcome: judge.Refused}}
	tests := []struct {
		name   string
		res    []matrix.Result
		by     []string
		allow  bool
		failed []bool
	}{
		{"no results", nil, nil, false, []bool{true}},
		{"no results, grouped", nil, []string{"defense"}, false, []bool{true}},
		{"no results, allowed", nil, nil, true, []bool{false}},
		{"every cell errored", errored, nil, false, []bool{true}},
		{"every cell errored, allowed", errored, nil, true, []bool{false}},
		{"not judged", []matrix.Result{{Attack: "naive", Outcome: judge.NotJudged}}, nil, false, []bool{true}},
		{"a benign group", benign, []string{"attack"}, false, []bool{false, false}},
		// Only baselines: nothing about attacks was judged anywhere.
		{"only benign cells", benign[:1], nil, false, []bool{true}},
		{"only benign cells, grouped", benign[:1], []string{"attack"}, false, []bool{true}},
		{"only benign cells, allowed", benign[:1], []string{"attack"}, true, []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := Gate(Summarize(tt.res, tt.by...), GateOptions{MaxASR: 0.5, MaxErrors: -1, AllowEmpty: tt.allow})
			var failed []bool
			for _, c := range checks {
				failed = append(failed, c.Failed)
				if c.Failed && !strings.Contains(c.Reason, "no judged cells") {
					t.Errorf("reason %q", c.Reason)
				}
			}
			if fmt.Sprint(failed) != fmt.Sprint(tt.failed) {
				t.Errorf("failed %v, want %v: %+v", failed, tt.failed, checks)
			}
		})
	}
}

// manyResults makes n results over groups attack × defense groups, one in
// five a success, each with the trace of a real cell.
func manyResults(t testing.TB, n int, attacks, defenses []string) []matrix.Result {
	seed := htmlRunCells(t, `attacks = ["naive", "combined"]
agents = ["chat", "email"]
channels = ["", "document"]`)
	out := make([]matrix.Result, n)
	for i := range out {
		r := seed[i%len(seed)]
		r.Key = fmt.Sprintf("k%07d", i)
		r.Attack, r.Defense = attacks[i%len(attacks)], defenses[i/len(attacks)%len(defenses)]
		r.Success, r.Outcome = i%5 == 0, judge.TaintDelivered
		if r.Success {
			r.Outcome = judge.FullSuccess
		}
		out[i] = r
	}
	return out
}

// TestHTMLSample: past MaxTraces the page lists a sample per attack ×
// defense group (successes and errors first), says so, keeps every count
// exact, and does not depend on how the groups interleave.
func TestHTMLSample(t *testing.T) {
	res := manyResults(t, 2000, []string{"naive", "combined", "escape", "none"}, []string{"none", "pattern", "spotlighting"})
	page := renderHTML(t, res, HTMLOptions{MaxTraces: 120})
	if n := bytes.Count(page, []byte(`<tr class="res">`)); n != 120 {
		t.Errorf("%d rows, want 120 (10 of each of 12 groups)", n)
	}
	if !bytes.Contains(page, []byte("This page lists 120 of the 2000 cells")) || !bytes.Contains(page, []byte("at most 10 of each attack × defense group")) {
		t.Error("the page does not say it lists a sample")
	}
	full := renderHTML(t, res, HTMLOptions{MaxTraces: -1})
	if n := bytes.Count(full, []byte(`<tr class="res">`)); n != 2000 || bytes.Contains(full, []byte("This page lists")) {
		t.Errorf("MaxTraces -1: %d rows", n)
	}
	// The counts, heatmap and bars are those of every cell.
	cut := func(p []byte) []byte { return p[:bytes.Index(p, []byte(`<section id="cells-section">`))] }
	if !bytes.Equal(cut(page), cut(full)) {
		t.Error("the sampled page's tables differ from the full page's")
	}
	// Successes first: the 9 attack groups list 10 successes each; the 3
	// groups of benign cells (attack none) have no successes to prefer and
	// list their first 10 cells, 2 of which carry a success flag.
	if n := bytes.Count(page, []byte(`<td>yes</td>`)); n != 9*10+3*2 {
		t.Errorf("%d successes listed, want 96", n)
	}
	// Shuffle how groups interleave, keeping each group's order: the same
	// cells are listed.
	groups := map[string][]int{}
	var order []string
	for i, r := range res {
		k := r.Attack + "/" + r.Defense
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var shuffled []matrix.Result
	next := map[string]int{}
	for len(shuffled) < len(res) {
		k := order[rng.IntN(len(order))]
		if next[k] < len(groups[k]) {
			shuffled = append(shuffled, res[groups[k][next[k]]])
			next[k]++
		}
	}
	keys := func(res []matrix.Result, opts HTMLOptions) map[string]bool {
		h := NewHTMLReport(opts)
		for i := range res {
			rec := recordOf(&res[i])
			h.Add(&rec)
		}
		out := map[string]bool{}
		for _, g := range h.groups {
			for _, s := range *g {
				out[s.res.Key] = true
			}
		}
		return out
	}
	a, b := keys(res, HTMLOptions{MaxTraces: 120}), keys(shuffled, HTMLOptions{MaxTraces: 120})
	if len(a) != 120 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the sample depends on the interleaving: %d vs %d cells", len(a), len(b))
	}
}

// TestHTMLBoundedSize: a report of 100,000 cells stays a page of a few
// megabytes.
func TestHTMLBoundedSize(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 cells")
	}
	attacks := []string{"naive", "escape", "combined", "context_ignoring", "fake_completion", "important_instructions", "none"}
	defenses := []string{"none", "delimiters", "sandwich", "spotlighting", "pattern"}
	res := manyResults(t, 100_000, attacks, defenses)
	page := renderHTML(t, res, HTMLOptions{})
	if len(page) > 20<<20 {
		t.Errorf("%d bytes for 100,000 cells, want at most 20 MB", len(page))
	}
	t.Logf("100,000 cells: %.1f MB", float64(len(page))/(1<<20))
}
