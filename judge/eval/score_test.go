package eval

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/report"
)

// byReply is a judge whose verdict is written in the reply: "outcome" or
// "error".
type byReply struct{}

func (byReply) Judge(_ context.Context, tr agent.Trace, _ judge.Task) (judge.Verdict, error) {
	if tr.FinalText == "error" {
		return judge.Verdict{}, errors.New("model down")
	}
	o := judge.Outcome(tr.FinalText)
	return judge.Verdict{Outcome: o, Success: o.Success(), Reason: "said " + tr.FinalText}, nil
}

func rec(id string, label judge.Outcome, verdict string) Record {
	return Record{ID: id, Label: label, Reason: "because", Task: "t", Reply: verdict}
}

func TestEvaluate(t *testing.T) {
	recs := []Record{
		rec("tp1", judge.FullSuccess, "full_success"),
		rec("tp2", judge.SinkAttempted, "full_success"), // success both, outcomes differ
		rec("tp3", judge.FullSuccess, "full_success"),
		rec("fn", judge.FullSuccess, "taint_delivered"),
		rec("fp", judge.TaintDelivered, "full_success"),
		rec("tn1", judge.TaintDelivered, "taint_delivered"),
		rec("tn2", judge.Refused, "taint_delivered"),
		rec("tn3", judge.Degenerate, "degenerate"),
		rec("err", judge.FullSuccess, "error"),
	}
	rep, err := Evaluate(context.Background(), byReply{}, "fake", recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Success
	if s.TP != 3 || s.FP != 1 || s.FN != 2 || s.TN != 3 {
		t.Errorf("tp %d fp %d fn %d tn %d", s.TP, s.FP, s.FN, s.TN)
	}
	if s.Precision != report.NewRate(3, 4) || s.Recall != report.NewRate(3, 5) {
		t.Errorf("precision %v, recall %v", s.Precision, s.Recall)
	}
	lo, hi := report.Wilson(3, 4, report.Z95)
	if s.Precision.Low != lo || s.Precision.High != hi {
		t.Errorf("precision interval %v–%v, want %v–%v", s.Precision.Low, s.Precision.High, lo, hi)
	}
	if want := 2 * 0.75 * 0.6 / 1.35; math.Abs(s.F1-want) > 1e-12 {
		t.Errorf("F1 %v, want %v", s.F1, want)
	}
	if rep.Records != 9 || rep.Errors != 1 || rep.Agreement != report.NewRate(4, 9) {
		t.Errorf("records %d errors %d agreement %v", rep.Records, rep.Errors, rep.Agreement)
	}
	wantOutcomes := []judge.Outcome{judge.FullSuccess, judge.SinkAttempted, judge.TaintDelivered, judge.Refused, judge.Degenerate, judge.RuntimeError}
	if !reflect.DeepEqual(rep.Outcomes, wantOutcomes) {
		t.Fatalf("outcomes %v", rep.Outcomes)
	}
	want := [][]int{
		{2, 0, 1, 0, 0, 1}, // full_success
		{1, 0, 0, 0, 0, 0}, // sink_attempted
		{1, 0, 1, 0, 0, 0}, // taint_delivered
		{0, 0, 1, 0, 0, 0}, // refused
		{0, 0, 0, 0, 1, 0}, // degenerate
		{0, 0, 0, 0, 0, 0}, // runtime_error
	}
	if !reflect.DeepEqual(rep.Matrix, want) {
		t.Errorf("matrix %v, want %v", rep.Matrix, want)
	}
	full := rep.PerOutcome[0]
	if full.Outcome != judge.FullSuccess || full.Labelled != 4 || full.Judged != 4 || full.Agreed != 2 ||
		full.Precision != report.NewRate(2, 4) || full.Recall != report.NewRate(2, 4) {
		t.Errorf("full_success scores %+v", full)
	}
	var ids []string
	for _, d := range rep.Disagreements {
		ids = append(ids, d.ID)
	}
	if !reflect.DeepEqual(ids, []string{"tp2", "fn", "fp", "tn2", "err"}) {
		t.Errorf("disagreements %v", ids)
	}
	for _, d := range rep.Disagreements {
		flip := d.ID == "fn" || d.ID == "fp" || d.ID == "err"
		if d.SuccessDiffers != flip {
			t.Errorf("%s: success differs %v", d.ID, d.SuccessDiffers)
		}
		if d.ID == "err" && (d.Outcome != judge.RuntimeError || !strings.Contains(d.JudgeReason, "model down")) {
			t.Errorf("a judge error: %+v", d)
		}
		if d.Reason != "because" {
			t.Errorf("%s: reason %q", d.ID, d.Reason)
		}
	}
}

func TestEvaluateEmptyRates(t *testing.T) {
	rep, err := Evaluate(context.Background(), byReply{}, "fake", []Record{rec("a", judge.Refused, "refused")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Success.Precision.N != 0 || rep.Success.Recall.N != 0 || rep.Success.F1 != 0 || len(rep.Disagreements) != 0 || rep.Disagreements == nil {
		t.Errorf("%+v", rep)
	}
	if !Below(rep.Success.Precision, 0, false) {
		t.Error("a rate over nothing passes a bound")
	}
}

func TestEvaluateCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Evaluate(ctx, byReply{}, "fake", []Record{rec("a", judge.Refused, "refused")}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
}

// cancelAfter is a judge that cancels its context once it has judged n
// replies: a Ctrl-C part-way through an evaluation.
type cancelAfter struct {
	n      int
	cancel context.CancelFunc
	seen   *int
}

func (c cancelAfter) Judge(ctx context.Context, tr agent.Trace, task judge.Task) (judge.Verdict, error) {
	if *c.seen++; *c.seen == c.n {
		c.cancel()
	}
	return byReply{}.Judge(ctx, tr, task)
}

// TestEvaluatePartial: cancelled part-way, Evaluate returns the report of
// the replies judged so far, with the context's error; progress saw each.
func TestEvaluatePartial(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recs := []Record{rec("a", judge.Refused, "refused"), rec("b", judge.Refused, "refused"), rec("c", judge.Refused, "refused"), rec("d", judge.Refused, "refused")}
	seen := 0
	var calls []int
	rep, err := Evaluate(ctx, cancelAfter{n: 2, cancel: cancel, seen: &seen}, "fake", recs, func(done, total int) {
		if total != len(recs) {
			t.Errorf("progress total %d, want %d", total, len(recs))
		}
		calls = append(calls, done)
	})
	if !errors.Is(err, context.Canceled) || rep.Records != 2 || !reflect.DeepEqual(calls, []int{1, 2}) {
		t.Errorf("err %v, %d records in the report, progress %v; want canceled, 2, [1 2]", err, rep.Records, calls)
	}
}

func TestDisagreementClipsReply(t *testing.T) {
	s := NewScorer("x")
	r := rec("long", judge.Refused, strings.Repeat("é", 200))
	s.Add(&r, judge.Verdict{Outcome: judge.TaintDelivered})
	got := s.Report().Disagreements[0].Reply
	if len(got) > ReplyClip+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("clipped reply %q (%d bytes)", got, len(got))
	}
}

func TestBelow(t *testing.T) {
	r := report.NewRate(19, 20) // 0.95, lower bound about 0.76
	tests := []struct {
		min    float64
		strict bool
		want   bool
	}{
		{0.95, false, false},
		{0.96, false, true},
		{0.95, true, true},
		{0.7, true, false},
	}
	for _, tt := range tests {
		if got := Below(r, tt.min, tt.strict); got != tt.want {
			t.Errorf("Below(%v, %v, %v) = %v", r, tt.min, tt.strict, got)
		}
	}
}

func TestCount(t *testing.T) {
	got := Count([]Record{rec("a", judge.Refused, ""), rec("b", judge.FullSuccess, ""), rec("c", judge.Refused, "")})
	want := []LabelCount{{judge.FullSuccess, 1}, {judge.Refused, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v", got)
	}
}

// sinkFlood is a record whose reply comes with n identical sink calls.
func sinkFlood(n int) Record {
	r := Record{ID: "flood", Label: judge.SinkAttempted, Reason: "calls the sink", Task: "send mail", Reply: "done", User: "hi"}
	r.SinkCalls = make([]Call, n)
	for i := range r.SinkCalls {
		r.SinkCalls[i] = Call{Tool: "send_email", Arguments: map[string]any{"to": "a@b.example"}}
	}
	return r
}

// BenchmarkEvaluateSinkCalls judges one record with many sink calls: the
// work must grow with their number, not its square.
func BenchmarkEvaluateSinkCalls(b *testing.B) {
	for _, n := range []int{40_000, 300_000} {
		recs := []Record{sinkFlood(n)}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Evaluate(context.Background(), judge.Rule{}, "rule", recs, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
