package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/report"
)

// stdoutKeys reads what a run wrote to stdout as JSONL results: every
// line must be one.
func stdoutKeys(t *testing.T, out string) []string {
	t.Helper()
	var keys []string
	err := report.Scan(strings.NewReader(out), "stdout", ".jsonl", func(r *report.Record) error {
		keys = append(keys, r.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("stdout is not pure JSONL results: %v\n%s", err, out)
	}
	return keys
}

// TestOutputDashIsStdout: "-o -" writes the results to standard output as
// JSONL, never a file named "-", on every command that runs cells; what
// it says goes to stderr, so stdout is results alone.
func TestOutputDashIsStdout(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := writeFile(t, dir, "exp.toml", "[target]\nspec = \"mock:obedient\"\n[matrix]\nattacks = [\"naive\", \"combined\"]\ndefenses = [\"none\", \"spotlighting\"]\n")
	tests := []struct {
		name  string
		args  []string
		cells int
	}{
		{"dataset run", []string{"dataset", "run", "direct_injection", "--target", "mock:obedient", "-o", "-"}, 20},
		{"matrix", []string{"matrix", "--config", cfg, "--output", "-"}, 4},
		{"run", []string{"run", "--agent", "chat", "--attack", "naive", "--target", "mock:obedient", "-o", "-"}, 1},
		{"a shard", []string{"dataset", "run", "direct_injection", "--target", "mock:obedient", "-o", "-", "--shard", "1/2"}, -1},
		{"repeats with their summary rows", []string{"matrix", "--config", cfg, "-o", "-", "--repeats", "2", "--repeat-summary"}, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.args...)
			if r.code != 0 {
				t.Fatalf("%+v", r)
			}
			keys := stdoutKeys(t, r.out)
			if tt.cells >= 0 && len(keys) != tt.cells {
				t.Errorf("%d results on stdout, want %d", len(keys), tt.cells)
			}
			if tt.cells < 0 && (len(keys) == 0 || len(keys) >= 20) {
				t.Errorf("a shard of 20 cells wrote %d", len(keys))
			}
			if _, err := os.Lstat(filepath.Join(dir, "-")); err == nil {
				t.Fatalf("a file named - was written")
			}
			if !strings.Contains(r.err, "results: standard output") {
				t.Errorf("stderr does not say where the results went: %s", r.err)
			}
		})
	}

	// What -o - writes, report - reads.
	r := run(t, "dataset", "run", "direct_injection", "--target", "mock:obedient", "-o", "-")
	if rep := runStdin(t, r.out, "report", "-"); rep.code != 0 || !strings.Contains(rep.out, "18/20") {
		t.Errorf("report - over dataset run -o -: %+v", rep)
	}
}

// TestOutputDashRefusals: what standard output cannot do is bad usage
// (exit 2), before anything runs: be resumed from, take CSV options, or
// share stdout with --json.
func TestOutputDashRefusals(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := writeFile(t, dir, "exp.toml", "[matrix]\nattacks = [\"naive\"]\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"dataset", "run", "direct_injection", "-o", "-", "--resume"}, "standard output"},
		{[]string{"matrix", "--config", cfg, "-o", "-", "--resume"}, "standard output"},
		{[]string{"dataset", "run", "direct_injection", "-o", "-", "--csv-raw"}, "--csv-raw"},
		{[]string{"run", "--attack", "naive", "-o", "-", "--json"}, "standard output"},
	}
	for _, tt := range tests {
		r := run(t, tt.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, tt.want) || r.out != "" {
			t.Errorf("%v: want exit 2 naming %q: %+v", tt.args, tt.want, r)
		}
		if _, err := os.Lstat("-"); err == nil {
			t.Fatalf("%v: a file named - was written", tt.args)
		}
	}
}

// TestOutputDashDryRun: a dry run with -o - prints its plan on stderr;
// stdout, where results would go, stays empty.
func TestOutputDashDryRun(t *testing.T) {
	t.Chdir(t.TempDir())
	r := run(t, "dataset", "run", "direct_injection", "-o", "-", "--dry-run")
	if r.code != 0 || r.out != "" || !strings.Contains(r.err, "cells") {
		t.Errorf("%+v", r)
	}
}
