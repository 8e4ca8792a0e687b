package mcpserve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// testLogs opens dir for a run's agent logs, closed when the test ends.
func testLogs(t *testing.T, dir string, resume bool) *Logs {
	t.Helper()
	l, err := OpenLogs(dir, resume)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestRunnerLogs: a cell's logs are created new in the --agent-logs
// directory, and what whoever wrote the config planted under a cell's
// name (the key is theirs to compute) is never written through.
func TestRunnerLogs(t *testing.T) {
	cfg, err := matrix.Parse("exp.toml", []byte(emailCell))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := matrix.Plan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := cells[0].Key
	tests := []struct {
		name    string
		plant   func(t *testing.T, dir, victim string)
		resume  bool
		refused string // the file named in the cell's error; "" when written
	}{
		{name: "a new directory", plant: func(*testing.T, string, string) {}},
		{name: "a symlink to a victim as KEY.stdout", plant: func(t *testing.T, dir, victim string) {
			must(t, os.Symlink(victim, filepath.Join(dir, key+".stdout")))
		}, refused: key + ".stdout"},
		{name: "a symlink to a victim as KEY.stderr, resuming", plant: func(t *testing.T, dir, victim string) {
			must(t, os.Symlink(victim, filepath.Join(dir, key+".stderr")))
		}, resume: true, refused: key + ".stderr"},
		{name: "a hard link to a victim, resuming", plant: func(t *testing.T, dir, victim string) {
			must(t, os.Link(victim, filepath.Join(dir, key+".stdout")))
		}, resume: true, refused: key + ".stdout"},
		{name: "an earlier run's log", plant: func(t *testing.T, dir, _ string) {
			must(t, os.WriteFile(filepath.Join(dir, key+".stdout"), []byte("old"), 0o644))
		}, refused: key + ".stdout"},
		{name: "an earlier run's log, resuming", plant: func(t *testing.T, dir, _ string) {
			must(t, os.WriteFile(filepath.Join(dir, key+".stdout"), []byte("old"), 0o644))
		}, resume: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			victim := filepath.Join(t.TempDir(), "victim")
			must(t, os.WriteFile(victim, []byte("keep me"), 0o600))
			dir := filepath.Join(t.TempDir(), "logs")
			must(t, os.Mkdir(dir, 0o755))
			tt.plant(t, dir, victim)
			r := helperRunner("obey")
			r.Logs = testLogs(t, dir, tt.resume)
			res := runCells(t, r, emailCell)[0]
			if b, _ := os.ReadFile(victim); string(b) != "keep me" {
				t.Fatalf("the victim now holds %q", clipped(string(b)))
			}
			if tt.refused != "" {
				if res.Outcome != judge.RuntimeError || !strings.Contains(res.Error, filepath.Join(dir, tt.refused)) || !strings.Contains(res.Error, "already exists") {
					t.Fatalf("outcome %s, error %q; want a runtime error naming %s", res.Outcome, res.Error, tt.refused)
				}
				return
			}
			if res.Outcome == judge.RuntimeError {
				t.Fatalf("runtime error: %s", res.Error)
			}
			b, err := os.ReadFile(filepath.Join(dir, key+".stdout"))
			if err != nil || !strings.Contains(string(b), "listed 8 tools") {
				t.Errorf("log %q, %v", clipped(string(b)), err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
