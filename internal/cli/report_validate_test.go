package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestGateRefusesBadRecords: gate, report and compare exit 2 on a results
// file whose verdicts are not verdicts (an unknown or null outcome, a
// success that is not true or false) or whose CSV rows do not fit the
// header or the format, naming the file and the line and what was
// expected; nothing goes to stdout and no panic escapes.
func TestGateRefusesBadRecords(t *testing.T) {
	dir := t.TempDir()
	good := writeReportResults(t, dir, "good.jsonl", reportCells("k", "naive", "none", 4, 1))
	const head = "key,attack,defense,outcome,success\n"
	const row = "k0,naive,none,refused,false\n"
	files := []struct{ name, body, want string }{
		{"banana.csv", head + row + "k1,naive,none,refused,banana\n", `banana.csv:3: not a result: column "success": want true or false`},
		{"yes.csv", head + "k1,naive,none,refused,yes\n", `yes.csv:2:`},
		{"nan.csv", head + "k1,naive,none,refused,NaN\n", `nan.csv:2:`},
		{"empty-success.csv", head + "k1,naive,none,refused,\n", `empty-success.csv:2: not a result: column "success": want true or false, got an empty cell`},
		{"outcome.csv", head + "k1,naive,none,banana,false\n", `outcome.csv:2: not a result: column "outcome": want one of full_success`},
		{"short.csv", head + row + "k2,naive\n", `short.csv:3: not a result: the row has 2 fields, want 5`},
		{"quote-end.csv", head + row + "\"", `quote-end.csv:3: malformed CSV`},
		{"quote-header.csv", "\"key,attack,outcome\n" + row, `quote-header.csv:1: malformed CSV`},
		{"bare-quote.csv", head + "k\"1,naive,none,refused,false\n", `bare-quote.csv:2: malformed CSV`},
		{"banana.jsonl", `{"key":"k1","attack":"naive","outcome":"refused","success":false}` + "\n" + `{"key":"k2","attack":"naive","outcome":"banana","success":false}` + "\n", `banana.jsonl:2: not a result: field "outcome": want one of full_success`},
		{"null.jsonl", `{"key":"k1","attack":"naive","outcome":null,"success":false}` + "\n", `null.jsonl:1: not a result: field "outcome": want one of full_success`},
		{"null.json", "[\n" + `{"key":"k1","attack":"naive","outcome":null}` + "\n]\n", `null.json:2:`},
	}
	for _, f := range files {
		path := writeFile(t, dir, f.name, f.body)
		for _, args := range [][]string{
			{"gate", path, "--max-asr", "0.5"},
			{"gate", good, path, "--max-asr", "1", "--by", "attack"},
			{"report", path},
			{"report", good, path, "--format", "json"},
			{"compare", good, path},
			{"compare", path, good},
		} {
			t.Run(f.name+" "+args[0], func(t *testing.T) {
				r := run(t, args...)
				if r.code != ExitUsage || !strings.Contains(r.err, f.want) || r.out != "" || strings.Contains(r.err, "panic") {
					t.Errorf("%v: exit %d, want 2 and %q on stderr and nothing on stdout:\n%s%s", args, r.code, f.want, r.err, r.out)
				}
			})
		}
	}
}

// TestGateOverNothingFails: a gate whose checks cover no judged attack
// cell fails (exit 1), whatever the grouping: no results, only baselines.
func TestGateOverNothingFails(t *testing.T) {
	dir := t.TempDir()
	baseline := writeReportResults(t, dir, "baseline.jsonl", reportCells("b", "none", "none", 3, 0))
	blank := writeFile(t, dir, "blank.jsonl", "\n\n  \n")
	header := writeFile(t, dir, "header.csv", "key,attack,outcome,success\n")
	for i, args := range [][]string{
		{"gate", blank, "--max-asr", "0.5"},
		{"gate", header, "--max-asr", "0.5", "--by", "attack"},
		{"gate", baseline, "--max-asr", "0.5"},
		{"gate", baseline, "--max-asr", "0.5", "--by", "attack"},
		{"gate", baseline, "--max-asr", "0.5", "--by", "defense"},
	} {
		t.Run(fmt.Sprint(i, " ", filepath.Base(args[1])), func(t *testing.T) {
			r := run(t, args...)
			if r.code != ExitFailed || !strings.Contains(r.out, "FAIL") || !strings.Contains(r.out, "no judged cells") {
				t.Errorf("%v: exit %d, want 1 and a failed check:\n%s%s", args, r.code, r.out, r.err)
			}
		})
	}
	if r := run(t, "gate", baseline, "--max-asr", "0.5", "--allow-empty"); r.code != ExitOK {
		t.Errorf("--allow-empty: %+v", r)
	}
}

// TestReportBOM: JSON and JSONL files, and standard input, that start
// with a UTF-8 byte-order mark read like the same files without it.
func TestReportBOM(t *testing.T) {
	dir := t.TempDir()
	const bom = "\ufeff"
	const a = `{"key":"k1","attack":"naive","defense":"none","outcome":"full_success","success":true}`
	const b = `{"key":"k2","attack":"naive","defense":"none","outcome":"refused","success":false}`
	jsonl := writeFile(t, dir, "bom.jsonl", bom+a+"\n"+b+"\n")
	json := writeFile(t, dir, "bom.json", bom+"[\n  "+a+",\n  "+b+"\n]\n")
	csv := writeFile(t, dir, "bom.csv", bom+"key,attack,outcome,success\nk1,naive,full_success,true\nk2,naive,refused,false\n")
	for _, args := range [][]string{
		{"report", jsonl},
		{"report", json},
		{"report", csv},
		{"report", "-"},
	} {
		r := runStdin(t, bom+a+"\n"+b+"\n", args...)
		if r.code != 0 || !strings.Contains(r.out, "1/2 (50.0%") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	// The two files hold the same cells: each counts once.
	if r := run(t, "gate", jsonl, json, "--max-asr", "0.5"); r.code != 0 || !strings.Contains(r.out, "1/2") || !strings.Contains(r.err, "passed over 2 duplicate") {
		t.Errorf("gate: %+v", r)
	}
	if r := run(t, "compare", jsonl, json); r.code != 0 || !strings.Contains(r.out, "0 cells flipped") {
		t.Errorf("compare: %+v", r)
	}
}
