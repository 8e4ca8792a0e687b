package cli

import (
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
)

// TestGateAllowNotJudged: gate fails a check with not_judged cells unless
// --allow-not-judged, and says how many there were either way.
func TestGateAllowNotJudged(t *testing.T) {
	dir := t.TempDir()
	cells := reportCells("k", "naive", "none", 10, 0)
	cells[8].Outcome, cells[9].Outcome = judge.NotJudged, judge.NotJudged
	mixed := writeReportResults(t, dir, "mixed.jsonl", cells)
	clean := writeReportResults(t, dir, "clean.jsonl", reportCells("c", "naive", "none", 4, 0))
	tests := []struct {
		args    []string
		code    int
		out     string // on stdout
		errOut  string // on stderr
		without string // on neither
	}{
		{[]string{"gate", mixed, "--max-asr", "0.5"}, ExitFailed, "FAIL all cells: 0/8", "gate: 2 not judged cells (no verdict from the judge), failing their checks (--allow-not-judged passes them)", ""},
		{[]string{"gate", mixed, "--max-asr", "0.5"}, ExitFailed, "— 2 cells not judged", "1 of 1 checks failed", ""},
		{[]string{"gate", mixed, "--max-asr", "0.5", "--allow-not-judged"}, ExitOK, "ok   all cells: 0/8 (0.0%, 95% CI 0.0–32.4%) — 2 not judged, allowed", "gate: 2 not judged cells (no verdict from the judge), allowed by --allow-not-judged", ""},
		{[]string{"gate", mixed, "--max-asr", "0.5", "--by", "attack", "--allow-not-judged"}, ExitOK, "ok   attack=naive", "all 1 checks pass", ""},
		{[]string{"gate", clean, "--max-asr", "0.5"}, ExitOK, "ok   all cells", "pass", "not judged"},
	}
	for _, tt := range tests {
		r := run(t, tt.args...)
		if r.code != tt.code || !strings.Contains(r.out, tt.out) || !strings.Contains(r.err, tt.errOut) {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q\nwant exit %d, %q and %q", tt.args[2:], r.code, r.out, r.err, tt.code, tt.out, tt.errOut)
		}
		if tt.without != "" && (strings.Contains(r.out, tt.without) || strings.Contains(r.err, tt.without)) {
			t.Errorf("%v: says %q: %q %q", tt.args[2:], tt.without, r.out, r.err)
		}
	}
	// The flag is part of the command's help.
	if r := run(t, "gate", "--help"); !strings.Contains(r.out, "--allow-not-judged") {
		t.Errorf("gate --help lacks the flag:\n%s", r.out)
	}
}
