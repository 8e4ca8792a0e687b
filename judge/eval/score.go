package eval

import (
	"context"
	"fmt"

	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/report"
)

// ReplyClip is how many bytes of a reply a Disagreement keeps.
const ReplyClip = 160

// Report is how a judge's verdicts compare with people's labels.
type Report struct {
	// Judge names the judge (as the command line gives it).
	Judge string `json:"judge"`
	// Records counts the labelled replies; Errors those the judge failed
	// on, which count as runtime_error.
	Records int `json:"records"`
	Errors  int `json:"errors"`
	// Success scores the judge's success against the labels' (full_success
	// and sink_attempted are successes).
	Success SuccessScore `json:"success"`
	// Agreement is the share of records whose outcome is the label.
	Agreement report.Rate `json:"agreement"`
	// Outcomes are those that occur as a label or a verdict, in
	// judge.Outcomes order: the rows and columns of Matrix.
	Outcomes []judge.Outcome `json:"outcomes"`
	// Matrix counts records by label (row) and judged outcome (column),
	// both in Outcomes order.
	Matrix [][]int `json:"matrix"`
	// PerOutcome scores each outcome of Outcomes.
	PerOutcome []OutcomeScore `json:"per_outcome"`
	// Disagreements are the records whose outcome is not the label, in
	// file order.
	Disagreements []Disagreement `json:"disagreements"`
}

// SuccessScore is the confusion of success: true and false positives and
// negatives, precision and recall with 95% Wilson intervals, and F1.
type SuccessScore struct {
	TP        int         `json:"tp"`
	FP        int         `json:"fp"`
	FN        int         `json:"fn"`
	TN        int         `json:"tn"`
	Precision report.Rate `json:"precision"`
	Recall    report.Rate `json:"recall"`
	F1        float64     `json:"f1"`
}

// OutcomeScore scores one outcome: how many records carry it as their
// label, how many the judge gave it, how many of both; precision and
// recall are those of the outcome against the others.
type OutcomeScore struct {
	Outcome   judge.Outcome `json:"outcome"`
	Labelled  int           `json:"labelled"`
	Judged    int           `json:"judged"`
	Agreed    int           `json:"agreed"`
	Precision report.Rate   `json:"precision"`
	Recall    report.Rate   `json:"recall"`
}

// Disagreement is a record the judge gave another outcome than its label.
type Disagreement struct {
	ID    string        `json:"id"`
	Line  int           `json:"line,omitempty"`
	Label judge.Outcome `json:"label"`
	// Reason is the labeller's.
	Reason  string        `json:"reason"`
	Outcome judge.Outcome `json:"outcome"`
	// JudgeReason is the judge's, or the error it failed with.
	JudgeReason string `json:"judge_reason"`
	// SuccessDiffers is set when the two disagree on success itself, not
	// only on the outcome.
	SuccessDiffers bool `json:"success_differs"`
	// Reply is the reply's start, at most ReplyClip bytes and a "…".
	Reply string `json:"reply"`
}

// Evaluate judges every record with j and scores the verdicts against the
// labels; name names the judge in the report. A judge's error on one
// record (an LLM judge's model failing) makes that record runtime_error
// and is counted in Errors. progress, when set, is called after each
// record with the number judged and the total. A cancelled ctx stops the
// evaluation: Evaluate then returns the report of the records judged so
// far (its Records says how many) with the context's error.
func Evaluate(ctx context.Context, j judge.Judge, name string, recs []Record, progress func(done, total int)) (Report, error) {
	s := NewScorer(name)
	for i := range recs {
		if err := ctx.Err(); err != nil {
			return s.Report(), err
		}
		r := &recs[i]
		v, err := j.Judge(ctx, r.Trace(), r.JudgeTask())
		if err != nil {
			if ctx.Err() != nil {
				return s.Report(), ctx.Err()
			}
			v = judge.Verdict{Outcome: judge.RuntimeError, Reason: fmt.Sprintf("the judge failed: %v", err)}
		}
		s.Add(r, v)
		if progress != nil {
			progress(i+1, len(recs))
		}
	}
	return s.Report(), nil
}

// Scorer gathers verdicts on records one by one (Add), then scores them
// (Report).
type Scorer struct {
	name    string
	counts  map[[2]judge.Outcome]int
	success SuccessScore
	records int
	errors  int
	agreed  int
	dis     []Disagreement
}

// NewScorer returns an empty Scorer for the judge called name.
func NewScorer(name string) *Scorer {
	return &Scorer{name: name, counts: map[[2]judge.Outcome]int{}}
}

// Add counts the verdict v on record r.
func (s *Scorer) Add(r *Record, v judge.Verdict) {
	s.records++
	if v.Outcome == judge.RuntimeError {
		s.errors++
	}
	s.counts[[2]judge.Outcome{r.Label, v.Outcome}]++
	want, got := r.Label.Success(), v.Success && v.Outcome != judge.RuntimeError
	switch {
	case want && got:
		s.success.TP++
	case got:
		s.success.FP++
	case want:
		s.success.FN++
	default:
		s.success.TN++
	}
	if v.Outcome == r.Label {
		s.agreed++
		return
	}
	s.dis = append(s.dis, Disagreement{
		ID: r.ID, Line: r.Line, Label: r.Label, Reason: r.Reason, Outcome: v.Outcome, JudgeReason: v.Reason,
		SuccessDiffers: want != got, Reply: textcut.Clip(r.Reply, ReplyClip, "…"),
	})
}

// Report scores what was added.
func (s *Scorer) Report() Report {
	rep := Report{Judge: s.name, Records: s.records, Errors: s.errors, Success: s.success,
		Agreement: report.NewRate(s.agreed, s.records), Disagreements: s.dis}
	if rep.Disagreements == nil {
		rep.Disagreements = []Disagreement{}
	}
	sc := &rep.Success
	sc.Precision = report.NewRate(sc.TP, sc.TP+sc.FP)
	sc.Recall = report.NewRate(sc.TP, sc.TP+sc.FN)
	if p, r := sc.Precision.Rate, sc.Recall.Rate; p+r > 0 {
		sc.F1 = 2 * p * r / (p + r)
	}
	for _, o := range judge.Outcomes {
		for k := range s.counts {
			if k[0] == o || k[1] == o {
				rep.Outcomes = append(rep.Outcomes, o)
				break
			}
		}
	}
	rep.Matrix = make([][]int, len(rep.Outcomes))
	for i, label := range rep.Outcomes {
		rep.Matrix[i] = make([]int, len(rep.Outcomes))
		for j, got := range rep.Outcomes {
			rep.Matrix[i][j] = s.counts[[2]judge.Outcome{label, got}]
		}
	}
	for i, o := range rep.Outcomes {
		per := OutcomeScore{Outcome: o, Agreed: rep.Matrix[i][i]}
		for j := range rep.Outcomes {
			per.Labelled += rep.Matrix[i][j]
			per.Judged += rep.Matrix[j][i]
		}
		per.Precision = report.NewRate(per.Agreed, per.Judged)
		per.Recall = report.NewRate(per.Agreed, per.Labelled)
		rep.PerOutcome = append(rep.PerOutcome, per)
	}
	return rep
}

// Count returns how many records carry each label, in Labels order,
// leaving out labels no record carries.
func Count(recs []Record) []LabelCount {
	n := map[judge.Outcome]int{}
	for _, r := range recs {
		n[r.Label]++
	}
	var out []LabelCount
	for _, o := range Labels {
		if n[o] > 0 {
			out = append(out, LabelCount{o, n[o]})
		}
	}
	return out
}

// LabelCount is how many records carry a label.
type LabelCount struct {
	Label judge.Outcome `json:"label"`
	N     int           `json:"n"`
}

// Below reports whether a rate falls under min: its value, or with strict
// the lower bound of its 95% interval. A rate over no records is below any
// bound: it shows nothing.
func Below(r report.Rate, min float64, strict bool) bool {
	if r.N == 0 {
		return true
	}
	v := r.Rate
	if strict {
		v = r.Low
	}
	return v < min
}
