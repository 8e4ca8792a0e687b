package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// reportJSON runs report --format json and decodes its totals.
func reportJSON(t *testing.T, stdin string, args ...string) (cells, errors, succ, n int, stderr string) {
	t.Helper()
	r := runStdin(t, stdin, append([]string{"report", "--format", "json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("report %v: %+v", args, r)
	}
	var s struct {
		Cells, Errors int
		ASR           struct{ Successes, N int }
	}
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		t.Fatalf("report %v: %v\n%s", args, err, r.out)
	}
	return s.Cells, s.Errors, s.ASR.Successes, s.ASR.N, r.err
}

// repeatedSuccess is the audit's second input: one success line written
// 50 times among 50 failures.
func repeatedSuccess() []matrix.Result {
	win := matrix.Result{Key: "win", Attack: "naive", Defense: "none", Agent: "chat", Target: "mock", Outcome: judge.FullSuccess, Success: true}
	var res []matrix.Result
	for _, r := range reportCells("lose", "naive", "none", 50, 0) {
		res = append(res, win, r)
	}
	return res
}

// TestReportCountsEachCellOnce: report, gate and compare read each cell
// key once, whatever repeats it (a file given twice, one line repeated,
// a file and stdin), in every output, and say how many lines they passed
// over.
func TestReportCountsEachCellOnce(t *testing.T) {
	dir := t.TempDir()
	a := writeReportResults(t, dir, "a.jsonl", reportCells("a", "naive", "none", 20, 18))
	rep := writeReportResults(t, dir, "repeated.jsonl", repeatedSuccess())
	aText, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name                  string
		stdin                 string
		args                  []string
		cells, succ, n, dupes int
	}{
		{"a file given twice", "", []string{a, a}, 20, 18, 20, 20},
		{"one success line 50 times among 50 failures", "", []string{rep}, 51, 1, 51, 49},
		{"stdin and the same file", string(aText), []string{"-", a}, 20, 18, 20, 20},
		{"stdin repeating itself", string(aText) + string(aText), []string{"-"}, 20, 18, 20, 20},
		{"no repeats", "", []string{a}, 20, 18, 20, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells, _, succ, n, stderr := reportJSON(t, tt.stdin, tt.args...)
			if cells != tt.cells || succ != tt.succ || n != tt.n {
				t.Errorf("cells %d, success %d/%d; want %d, %d/%d", cells, succ, n, tt.cells, tt.succ, tt.n)
			}
			want := "passed over " + strconv.Itoa(tt.dupes) + " duplicate"
			if tt.dupes == 0 {
				if strings.Contains(stderr, "duplicate") {
					t.Errorf("stderr speaks of duplicates where there are none: %s", stderr)
				}
			} else if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q: %s", want, stderr)
			}
		})
	}

	// Every output of report sees the cells once.
	html := filepath.Join(dir, "r.html")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", a, a}, "18/20"},
		{[]string{"report", a, a, "--format", "markdown"}, "18/20"},
		{[]string{"report", a, a, "--format", "csv"}, "18,20,0.9000"},
		{[]string{"report", rep, "--html", html}, ""},
	} {
		r := run(t, tc.args...)
		if r.code != 0 || !strings.Contains(r.out, tc.want) || strings.Contains(r.out, "36/40") {
			t.Errorf("%v: want %q: %+v", tc.args, tc.want, r)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if text := string(page); !strings.Contains(text, "1/51") || strings.Contains(text, "50/100") {
		t.Errorf("the HTML page does not count the repeated line once (want 1/51)")
	}

	// gate: 1/51 passes a 5% threshold that 50/100 fails; its JUnit
	// report says 1/51 too.
	junit := filepath.Join(dir, "gate.xml")
	r := run(t, "gate", rep, "--max-asr", "0.05", "--junit", junit)
	if r.code != 0 || !strings.Contains(r.out, "1/51") || !strings.Contains(r.err, "passed over 49 duplicate") {
		t.Errorf("gate over a repeated success line: %+v", r)
	}
	if x, err := os.ReadFile(junit); err != nil || !strings.Contains(string(x), "1/51") {
		t.Errorf("junit: %v\n%s", err, x)
	}
	if r := run(t, "gate", a, a, "--max-asr", "0.5", "--by", "attack"); r.code != ExitFailed || !strings.Contains(r.out, "18/20") {
		t.Errorf("gate over a file given twice: %+v", r)
	}

	// compare: each side counts its cells once.
	twice := writeFile(t, dir, "twice.jsonl", string(aText)+string(aText))
	r = run(t, "compare", a, twice, "--format", "json")
	var c struct {
		Overall struct{ Base, New struct{ Successes, N int } }
		OnlyNew int `json:"only_in_new"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.out), &c) != nil {
		t.Fatalf("compare: %+v", r)
	}
	if c.Overall.Base.N != 20 || c.Overall.New.N != 20 || c.Overall.New.Successes != 18 || c.OnlyNew != 0 || !strings.Contains(r.err, "passed over 20 duplicate") {
		t.Errorf("compare of a file against itself twice over: %+v\n%s", c, r.err)
	}
}

// TestReportRerunWinsOverRuntimeError: a resumed run's rerun of a failed
// cell counts, not the failure, whichever comes first; a cell that only
// failed counts as one runtime error.
func TestReportRerunWinsOverRuntimeError(t *testing.T) {
	dir := t.TempDir()
	failed := func(key string) matrix.Result {
		return matrix.Result{Key: key, Attack: "naive", Defense: "none", Agent: "chat", Target: "mock", Outcome: judge.RuntimeError, Error: "timeout"}
	}
	won := func(key string) matrix.Result {
		return matrix.Result{Key: key, Attack: "naive", Defense: "none", Agent: "chat", Target: "mock", Outcome: judge.FullSuccess, Success: true}
	}
	f := writeReportResults(t, dir, "resumed.jsonl", []matrix.Result{
		failed("rerun-later"), failed("only-failed"), won("failed-later"), failed("only-failed"),
		won("rerun-later"), failed("failed-later"),
	})
	cells, errs, succ, n, stderr := reportJSON(t, "", f)
	if cells != 3 || errs != 1 || succ != 2 || n != 2 || !strings.Contains(stderr, "passed over 3 duplicate") {
		t.Errorf("cells %d, errors %d, success %d/%d (want 3, 1, 2/2); stderr: %s", cells, errs, succ, n, stderr)
	}
	// The HTML page lists the cell that only failed, with its error,
	// read once the file has been read whole.
	html := filepath.Join(dir, "r.html")
	if r := run(t, "report", f, "--html", html); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if text := string(page); strings.Count(text, "only-failed") != 1 || !strings.Contains(text, "timeout") || !strings.Contains(text, "2/2") {
		t.Errorf("the page does not show the failed cell once with its error")
	}
}

// TestResultsRefuseDisagreeingVerdict: a result whose success flag and
// outcome disagree is refused (exit 2, naming the file and line) by every
// command that reads results.
func TestResultsRefuseDisagreeingVerdict(t *testing.T) {
	dir := t.TempDir()
	good := `{"key":"k1","attack":"naive","defense":"none","agent":"chat","target":"mock","outcome":"refused","success":false}`
	for _, bad := range []struct{ name, line string }{
		{"success true, outcome refused", `{"key":"k2","attack":"naive","defense":"none","agent":"chat","target":"mock","success":true,"outcome":"refused"}`},
		{"success false, outcome full_success", `{"key":"k2","attack":"naive","defense":"none","agent":"chat","target":"mock","success":false,"outcome":"full_success"}`},
		{"success true, outcome runtime_error", `{"key":"k2","attack":"naive","defense":"none","agent":"chat","target":"mock","outcome":"runtime_error","success":true}`},
		{"success false, outcome sink_attempted", `{"key":"k2","attack":"naive","defense":"none","agent":"chat","target":"mock","outcome":"sink_attempted","success":false}`},
	} {
		t.Run(bad.name, func(t *testing.T) {
			f := writeFile(t, dir, "bad.jsonl", good+"\n"+bad.line+"\n")
			arr := writeFile(t, dir, "bad.json", "["+good+",\n"+bad.line+"]\n")
			other := writeFile(t, dir, "other.jsonl", good+"\n")
			for _, args := range [][]string{
				{"report", f},
				{"report", arr},
				{"gate", f, "--max-asr", "1"},
				{"compare", other, f},
				{"merge", f, "-o", filepath.Join(dir, "merged.jsonl"), "--force"},
				{"judge", "rescore", f, "-o", filepath.Join(dir, "rescored.jsonl"), "--force"},
			} {
				r := run(t, args...)
				if r.code != ExitUsage || !strings.Contains(r.err, ":2:") || !strings.Contains(r.err, "disagree") {
					t.Errorf("%v: want exit 2 naming line 2 and the disagreement: %+v", args, r)
				}
			}
			if r := runStdin(t, bad.line+"\n", "report", "-"); r.code != ExitUsage || !strings.Contains(r.err, "stdin:1:") {
				t.Errorf("report -: %+v", r)
			}
			// export-case passes over a line that is not a result with a
			// warning, and refuses a file with nothing else.
			only := writeFile(t, dir, "only.jsonl", bad.line+"\n")
			if r := run(t, "export-case", only, "--key", "k2"); r.code != ExitUsage || !strings.Contains(r.err, "disagree") {
				t.Errorf("export-case: %+v", r)
			}
		})
	}
	// CSV: the Python pikit's True/False agree or are refused too.
	csvFile := writeFile(t, dir, "bad.csv", "key,attack,outcome,success\nk1,naive,refused,False\nk2,naive,refused,True\n")
	if r := run(t, "report", csvFile); r.code != ExitUsage || !strings.Contains(r.err, "bad.csv:3:") || !strings.Contains(r.err, "disagree") {
		t.Errorf("csv: %+v", r)
	}
}

// TestReportPrefixAndFileCountOnce: an s3:// prefix is deduplicated per
// shard by objstore; a prefix given twice, or beside a file of the same
// run, still counts each cell once.
func TestReportPrefixAndFileCountOnce(t *testing.T) {
	ep := fakeBucket(t)
	dir := t.TempDir()
	const prefix = "s3://results/once/"
	if r := run(t, "dataset", "run", "direct_injection", "--target", "mock:obedient", "-o", prefix, "--s3-endpoint", ep, "-q"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	file := filepath.Join(dir, "a.jsonl")
	if r := run(t, "dataset", "run", "direct_injection", "--target", "mock:obedient", "-o", file, "-q"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	for _, args := range [][]string{{prefix, prefix}, {prefix, file}} {
		cells, _, succ, n, stderr := reportJSON(t, "", append(args, "--s3-endpoint", ep, "--by", "attack")...)
		if cells != 20 || succ != 18 || n != 20 || !strings.Contains(stderr, "passed over 20 duplicate") {
			t.Errorf("%v: cells %d, success %d/%d, want 20, 18/20; stderr: %s", args, cells, succ, n, stderr)
		}
	}
	if r := run(t, "gate", prefix, file, "--s3-endpoint", ep, "--max-asr", "0.9"); r.code != 0 || !strings.Contains(r.out, "18/20") {
		t.Errorf("gate: %+v", r)
	}
}
