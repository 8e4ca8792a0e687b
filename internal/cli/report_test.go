package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportCompareGate(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.jsonl")
	next := filepath.Join(dir, "next.jsonl")
	if r := run(t, "dataset", "run", "direct_injection", "--target", "mock:obedient", "-o", base); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if r := run(t, "dataset", "run", "direct_injection", "--target", "mock", "-o", next); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	r := run(t, "report", base)
	for _, w := range []string{"attack success", "95% CI", "ATTACK", "DEFENSE", "CASE_ID"} {
		if !strings.Contains(r.out, w) {
			t.Errorf("report lacks %q:\n%s", w, r.out)
		}
	}
	r = run(t, "report", base, "--by", "attack,defense", "--format", "markdown")
	if r.code != 0 || !strings.Contains(r.out, "| attack | defense | success |") {
		t.Errorf("markdown: %+v", r)
	}
	if r := run(t, "report", base, "--format", "json"); r.code != 0 || !strings.Contains(r.out, `"asr"`) {
		t.Errorf("json: %+v", r)
	}
	if r := run(t, "report", base, "--by", "atack"); r.code != ExitUsage {
		t.Errorf("bad --by: %+v", r)
	}
	html := filepath.Join(dir, "r.html")
	if r := run(t, "report", base, "--html", html); r.code != 0 {
		t.Errorf("html: %+v", r)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("html report: %v", err)
	}
	// Python's result files read too.
	if r := run(t, "report", "../../report/testdata/python_results.json"); r.code != 0 || !strings.Contains(r.out, "2/3") {
		t.Errorf("python json: %+v", r)
	}

	r = run(t, "compare", base, next, "--by", "attack")
	if r.code != 0 || !strings.Contains(r.out, "cells flipped") || !strings.Contains(r.out, "now fails") || !strings.Contains(r.out, "*") {
		t.Errorf("compare: %+v", r)
	}

	junit := filepath.Join(dir, "gate.xml")
	r = run(t, "gate", base, "--max-asr", "0.10", "--by", "defense", "--junit", junit)
	if r.code != ExitFailed || !strings.Contains(r.out, "FAIL defense=none") {
		t.Errorf("gate over threshold: %+v", r)
	}
	if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), "<failure") {
		t.Errorf("junit: %v %s", err, b)
	}
	if r := run(t, "gate", next, "--max-asr", "0.10", "--max-errors", "0"); r.code != 0 || !strings.Contains(r.err, "pass") {
		t.Errorf("gate under threshold: %+v", r)
	}
	if r := run(t, "gate", next); r.code != ExitUsage {
		t.Errorf("gate without --max-asr: %+v", r)
	}
}
