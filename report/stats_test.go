package report

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

func TestTwoProportion(t *testing.T) {
	// Worked example: 35/100 against 50/100. Pooled p = 0.425,
	// SE = sqrt(0.425 × 0.575 × (1/100 + 1/100)) = 0.069911,
	// z = 0.15 / 0.069911 = 2.1456, two-sided p = 0.0319.
	z, p := TwoProportion(35, 100, 50, 100)
	if math.Abs(z-2.1456) > 5e-4 || math.Abs(p-0.0319) > 5e-4 {
		t.Errorf("z = %.4f, p = %.4f; want 2.1456, 0.0319", z, p)
	}
	if z, p := TwoProportion(50, 100, 35, 100); math.Abs(z+2.1456) > 5e-4 || math.Abs(p-0.0319) > 5e-4 {
		t.Errorf("reversed: z = %.4f, p = %.4f", z, p)
	}
	if z, p := TwoProportion(0, 0, 3, 10); z != 0 || p != 1 {
		t.Errorf("no data: %v %v", z, p)
	}
	if z, p := TwoProportion(10, 10, 10, 10); z != 0 || p != 1 {
		t.Errorf("no variance: %v %v", z, p)
	}
}

func TestPythonResultFiles(t *testing.T) {
	for _, name := range []string{"python_results.json", "python_results.csv"} {
		t.Run(name, func(t *testing.T) {
			res, err := ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 4 {
				t.Fatalf("%d results", len(res))
			}
			if res[0].CaseID != "di-001" || res[1].CaseID != "di-002" || res[3].CaseID != "" {
				t.Errorf("case ids from the reason prefix: %q %q %q", res[0].CaseID, res[1].CaseID, res[3].CaseID)
			}
			s := Summarize(res, "agent")
			// The error row is counted beside the rate, not in it.
			if s.Cells != 4 || s.Errors != 1 || s.ASR.Successes != 2 || s.ASR.N != 3 {
				t.Errorf("summary of a Python file: %+v", s)
			}
			if len(s.Groups) != 2 || s.Groups[0].Values[0] != "browser" || s.Groups[0].ASR.N != 1 || s.Groups[0].Errors != 1 {
				t.Errorf("groups: %+v", s.Groups)
			}
		})
	}
}

// goldenResults is a fixed set covering successes, failures, an error and
// the benign baseline with utility.
func goldenResults() []matrix.Result {
	yes, no := true, false
	var out []matrix.Result
	add := func(n int, r matrix.Result) {
		for i := 0; i < n; i++ {
			r.Key = r.Attack + r.Defense + string(rune('a'+len(out)%26)) + string(rune('a'+len(out)/26))
			out = append(out, r)
		}
	}
	add(7, matrix.Result{Attack: "combined", Defense: "none", Agent: "email", Channel: "document", Outcome: judge.FullSuccess, Success: true, Utility: &no})
	add(3, matrix.Result{Attack: "combined", Defense: "none", Agent: "email", Channel: "document", Outcome: judge.TaintDelivered, Utility: &yes})
	add(2, matrix.Result{Attack: "combined", Defense: "spotlighting", Agent: "email", Channel: "document", Outcome: judge.SinkAttempted, Success: true, Utility: &yes})
	add(8, matrix.Result{Attack: "combined", Defense: "spotlighting", Agent: "email", Channel: "document", Outcome: judge.Refused, Utility: &yes})
	add(1, matrix.Result{Attack: "naive", Defense: "none", Agent: "chat", Outcome: judge.RuntimeError, Error: "HTTP 503"})
	add(4, matrix.Result{Attack: "naive", Defense: "none", Agent: "chat", Outcome: judge.FullSuccess, Success: true})
	add(5, matrix.Result{Attack: "none", Defense: "none", Agent: "email", Channel: "document", Outcome: judge.NotReached, Utility: &yes})
	return out
}

func TestGoldenSummaries(t *testing.T) {
	res := goldenResults()
	for _, tt := range []struct {
		file  string
		write func(Summary, *bytes.Buffer) error
		by    []string
	}{
		{"summary_attack_defense.md", func(s Summary, b *bytes.Buffer) error { return s.WriteMarkdown(b) }, []string{"attack", "defense"}},
		{"summary_defense.json", func(s Summary, b *bytes.Buffer) error { return s.WriteJSON(b) }, []string{"defense"}},
		{"summary_agent.txt", func(s Summary, b *bytes.Buffer) error { return s.WriteText(b) }, []string{"agent"}},
		{"summary_attack.csv", func(s Summary, b *bytes.Buffer) error { return s.WriteCSV(b) }, []string{"attack"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(Summarize(res, tt.by...), &buf); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.file, buf.Bytes())
		})
	}
	s := Summarize(res)
	// 13 successes of 24 judged attack cells; the error and the 5 benign
	// cells are counted beside the rate.
	if s.ASR.Successes != 13 || s.ASR.N != 24 || s.Errors != 1 || s.Benign != 5 {
		t.Errorf("totals: %+v", s)
	}
	if s.Utility.Successes != 13 || s.Utility.N != 20 || s.BenignUtility.Successes != 5 || s.BenignUtility.N != 5 {
		t.Errorf("utility: under attack %+v, benign %+v", s.Utility, s.BenignUtility)
	}
}

func TestGateAndJUnit(t *testing.T) {
	res := goldenResults()
	checks := Gate(Summarize(res, "defense"), GateOptions{MaxASR: 0.3, MaxErrors: -1})
	if len(checks) != 2 || !checks[0].Failed || checks[1].Failed {
		t.Fatalf("none (11/15) must fail and spotlighting (2/10) pass at 30%%: %+v", checks)
	}
	strict := Gate(Summarize(res, "defense"), GateOptions{MaxASR: 0.3, Strict: true, MaxErrors: -1})
	if !strict[1].Failed || !strings.Contains(strict[1].Reason, "upper bound") {
		t.Errorf("strict: 2/10 has an upper bound over 30%%, so it must fail: %+v", strict[1])
	}
	errs := Gate(Summarize(res), GateOptions{MaxASR: 1, MaxErrors: 0})
	if len(errs) != 1 || !errs[0].Failed || !strings.Contains(errs[0].Reason, "1 runtime errors > 0") {
		t.Errorf("errors: %+v", errs)
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, "pikit gate", checks); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, w := range []string{`<testsuite name="pikit gate" tests="2" failures="1"`, `<testcase name="defense=none"`, `<failure message="attack success rate 78.6% &gt; 30.0%`, `<testcase name="defense=spotlighting"`} {
		if !strings.Contains(out, w) {
			t.Errorf("JUnit lacks %q:\n%s", w, out)
		}
	}
}

func TestCompare(t *testing.T) {
	base := goldenResults()
	next := goldenResults()
	// The new run's spotlighting stops every attack, and one cell flips the
	// other way.
	for i := range next {
		if next[i].Defense == "spotlighting" && next[i].Success {
			next[i].Success, next[i].Outcome = false, judge.Refused
		}
	}
	next[7].Success, next[7].Outcome = true, judge.FullSuccess // a combined/none failure now succeeds
	c := Compare(base, next, "defense")
	if len(c.Flips) != 3 || c.OnlyBase != 0 || c.OnlyNew != 0 {
		t.Fatalf("flips %+v, only base %d, only new %d", c.Flips, c.OnlyBase, c.OnlyNew)
	}
	var spot Change
	for _, g := range c.Groups {
		if g.Values[0] == "spotlighting" {
			spot = g
		}
	}
	if spot.Base.Successes != 2 || spot.New.Successes != 0 || spot.Delta >= 0 || spot.Significant {
		t.Errorf("2/10 → 0/10 is a drop but not significant at 5%%: %+v", spot)
	}
	big := Compare(fill(60, 100), fill(20, 100))
	if !big.Overall.Significant || big.Overall.P > 0.001 {
		t.Errorf("60/100 → 20/100 must be flagged: %+v", big.Overall)
	}
}

func fill(successes, n int) []matrix.Result {
	out := make([]matrix.Result, n)
	for i := range out {
		out[i] = matrix.Result{Key: string(rune('A'+i%26)) + string(rune('a'+i/26)), Attack: "naive", Outcome: judge.TaintDelivered}
		if i < successes {
			out[i].Success, out[i].Outcome = true, judge.FullSuccess
		}
	}
	return out
}
