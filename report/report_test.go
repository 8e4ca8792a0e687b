package report

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

func sampleResults(t *testing.T) []matrix.Result {
	t.Helper()
	cfg, err := matrix.Parse("t.toml", []byte(`attacks = ["naive", "combined"]
agents = ["chat", "email"]
channels = ["", "document"]
defenses = ["none", "pattern"]`))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := matrix.Plan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := matrix.Runner{RunID: "r1"}.RunAll(context.Background(), cells)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// jsonlOf encodes results as a JSONL file holds them.
func jsonlOf(t *testing.T, res []matrix.Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewJSONL(&buf)
	for _, r := range res {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestJSONLRoundTrip(t *testing.T) {
	res := sampleResults(t)
	first := string(jsonlOf(t, res))
	if n := strings.Count(first, "\n"); n != len(res) {
		t.Fatalf("%d lines for %d results", n, len(res))
	}
	var back []matrix.Result
	if err := ReadJSONL(strings.NewReader(first), func(r matrix.Result) error { back = append(back, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if string(jsonlOf(t, back)) != first {
		t.Error("JSONL → Result → JSONL is not the identity")
	}
	if !reflect.DeepEqual(back[0].TraceData.Steps, res[0].TraceData.Steps) {
		t.Error("trace did not survive the round trip")
	}
}

func TestReadJSONLBadLine(t *testing.T) {
	err := ReadJSONL(strings.NewReader("{\"key\":\"a\",\"outcome\":\"refused\"}\n\nnot json\n"), func(matrix.Result) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("want an error naming line 3, got %v", err)
	}
}

func TestFilesRoundTrip(t *testing.T) {
	res := sampleResults(t)
	dir := t.TempDir()
	for _, ext := range []string{".jsonl", ".json", ".csv"} {
		path := filepath.Join(dir, "out"+ext)
		w, err := Create(path, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if ext != ".jsonl" {
			if _, err := os.Stat(path); err == nil {
				t.Errorf("%s: the final name exists before Close", ext)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		back, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(back) != len(res) {
			t.Fatalf("%s: %d results back, want %d", ext, len(back), len(res))
		}
		for i := range res {
			a, b := res[i], back[i]
			if a.Key != b.Key || a.Outcome != b.Outcome || a.Success != b.Success || a.Attack != b.Attack ||
				a.Channel != b.Channel || a.FinalText != b.FinalText || !reflect.DeepEqual(a.Signals, b.Signals) {
				t.Errorf("%s: result %d differs:\n%+v\n%+v", ext, i, a, b)
			}
		}
		if _, err := Create(path, false); !errors.Is(err, ErrExists) {
			t.Errorf("%s: an existing file must not be overwritten without force, got %v", ext, err)
		}
		if w, err := Create(path, true); err != nil {
			t.Errorf("%s: force: %v", ext, err)
		} else {
			w.Close()
		}
	}
	// An extension pikit has no format of is JSON, as the Python pikit
	// writes it, and reads back as JSON.
	xml := filepath.Join(dir, "x.xml")
	w, err := Create(xml, false)
	if err != nil {
		t.Fatalf("unknown extension: %v", err)
	}
	if err := w.Write(matrix.Result{Key: "k", Attack: "naive", Outcome: "refused"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(xml); !strings.HasPrefix(strings.TrimSpace(string(b)), "[") {
		t.Errorf("x.xml is not JSON: %s", b)
	}
	n := 0
	if err := ScanFile(xml, func(*Record) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("x.xml read back: %d results, %v", n, err)
	}
}

func TestWilson(t *testing.T) {
	// Reference values of the Wilson score interval at 95% (z = 1.96).
	tests := []struct {
		s, n      int
		low, high float64
	}{
		{0, 10, 0.0000, 0.2775},
		{5, 10, 0.2366, 0.7634},
		{10, 10, 0.7225, 1.0000},
		{13, 20, 0.4329, 0.8188},
	}
	for _, tt := range tests {
		lo, hi := Wilson(tt.s, tt.n, Z95)
		if math.Abs(lo-tt.low) > 5e-4 || math.Abs(hi-tt.high) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = %.4f–%.4f, want %.4f–%.4f", tt.s, tt.n, lo, hi, tt.low, tt.high)
		}
	}
	if lo, hi := Wilson(0, 0, Z95); lo != 0 || hi != 1 {
		t.Errorf("n = 0 should know nothing, got %v–%v", lo, hi)
	}
}

func TestSummarize(t *testing.T) {
	res := []matrix.Result{
		{Attack: "a", Outcome: judge.FullSuccess, Success: true},
		{Attack: "a", Outcome: judge.Refused},
		{Attack: "b", Outcome: judge.SinkAttempted, Success: true},
		{Attack: "b", Outcome: judge.RuntimeError, Error: "x"},
		{Attack: "b", Outcome: judge.NotJudged},
	}
	s := Summarize(res, "attack")
	if s.Cells != 5 || s.Errors != 1 || s.NotJudged != 1 || s.ASR.Successes != 2 || s.ASR.N != 3 {
		t.Errorf("totals: %+v", s)
	}
	if len(s.Groups) != 2 || s.Groups[0].ASR.N != 2 || s.Groups[1].ASR.N != 1 || s.Groups[1].Errors != 1 {
		t.Errorf("groups: %+v", s.Groups)
	}
	var buf bytes.Buffer
	if err := s.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "2/3") {
		t.Errorf("text: %v %q", err, buf.String())
	}
}
