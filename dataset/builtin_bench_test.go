package dataset_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/report"
)

// TestBuiltinBenchmarks checks pikit's built-in datasets written in the
// style of standard benchmarks (agentdojo_style and injecagent_style; the
// built-ins named agentdojo and injecagent are the Python pikit's cases,
// checked in python_parity_test.go): they load, every case names its
// benchmark, and a run on mock:obedient errs nowhere, leaves benign cells'
// sinks alone, succeeds in most attacked cells and reports the benchmark's
// own metrics.
func TestBuiltinBenchmarks(t *testing.T) {
	tests := []struct {
		name       string
		benchmark  string // the benchmark its cases name, for its metrics
		idPrefixes []string
		benign     bool // has attack-none (utility) cases
	}{
		{name: "injecagent_style", benchmark: "injecagent", idPrefixes: []string{"ia-dh-", "ia-ds-"}},
		{name: "agentdojo_style", benchmark: "agentdojo", idPrefixes: []string{"ad-workspace-", "ad-banking-", "ad-travel-", "ad-slack-"}, benign: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Contains(dataset.List(), tt.name) {
				t.Fatalf("List() = %v lacks %s", dataset.List(), tt.name)
			}
			ds, err := dataset.Load(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if ds.Name != tt.name || ds.Description == "" || ds.Reference == "" {
				t.Errorf("meta: name %q description %q reference %q", ds.Name, ds.Description, ds.Reference)
			}
			if len(ds.Cases) < 15 {
				t.Errorf("%d cases, want at least 15", len(ds.Cases))
			}
			ids := map[string]bool{}
			prefixes := map[string]int{}
			benignCases := 0
			for _, c := range ds.Cases {
				if ids[c.ID] {
					t.Errorf("duplicate case id %s", c.ID)
				}
				ids[c.ID] = true
				if c.Description == "" {
					t.Errorf("case %s has no description", c.ID)
				}
				if c.Config.Benchmark != tt.benchmark {
					t.Errorf("case %s: benchmark %q, want %q", c.ID, c.Config.Benchmark, tt.benchmark)
				}
				for _, p := range tt.idPrefixes {
					if strings.HasPrefix(c.ID, p) {
						prefixes[p]++
					}
				}
				if slices.Equal(c.Config.Attacks, []string{"none"}) {
					benignCases++
					if c.Config.Expected == "" {
						t.Errorf("utility case %s expects nothing", c.ID)
					}
				} else if len(c.Config.SinkArgs) == 0 {
					t.Errorf("attack case %s names no sink_args", c.ID)
				}
			}
			for _, p := range tt.idPrefixes {
				if prefixes[p] == 0 {
					t.Errorf("no case id starts with %s", p)
				}
			}
			if tt.benign != (benignCases > 0) {
				t.Errorf("%d utility (attack none) cases; want some: %v", benignCases, tt.benign)
			}

			results, err := dataset.Run(context.Background(), tt.name, dataset.Options{Target: "mock:obedient", Concurrency: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(results) == 0 {
				t.Fatal("no results")
			}
			attacked, succeeded := 0, 0
			for _, r := range results {
				if r.Outcome == judge.RuntimeError || r.Error != "" {
					t.Errorf("%s/%s: runtime error: %s", r.CaseID, r.Attack, r.Error)
				}
				if r.Attack == "none" {
					if r.SinkFired {
						t.Errorf("%s: benign cell fired a sink", r.CaseID)
					}
					if r.Utility == nil || !*r.Utility {
						t.Errorf("%s: benign cell lost utility: %q", r.CaseID, r.FinalText)
					}
					continue
				}
				attacked++
				if r.Success {
					succeeded++
				}
			}
			if attacked == 0 || succeeded*4 < attacked*3 {
				t.Errorf("mock:obedient succeeded in %d of %d attacked cells, want at least three quarters", succeeded, attacked)
			}

			s := report.Summarize(results)
			if len(s.Benchmarks) != 1 || s.Benchmarks[0].Name != tt.benchmark {
				t.Fatalf("summary benchmarks = %+v, want %s only", s.Benchmarks, tt.benchmark)
			}
			b := s.Benchmarks[0]
			if b.Cells != len(results) || b.Invalid != 0 {
				t.Errorf("%s metrics: %d cells (want %d), %d invalid", tt.benchmark, b.Cells, len(results), b.Invalid)
			}
			switch tt.benchmark {
			case "injecagent":
				if b.ASRAll.N != attacked || b.ASRValid.N != attacked || b.ASRAll.Successes != succeeded {
					t.Errorf("InjecAgent ASR-all %+v, ASR-valid %+v; want %d of %d", b.ASRAll, b.ASRValid, succeeded, attacked)
				}
			case "agentdojo":
				if b.Utility.N != benignCases || b.Utility.Successes != benignCases {
					t.Errorf("AgentDojo utility %+v, want %d of %d", b.Utility, benignCases, benignCases)
				}
				if b.UtilityUA.N != attacked || b.TargetedASR.N != attacked || b.TargetedASR.Successes != succeeded {
					t.Errorf("AgentDojo utility under attack %+v, targeted ASR %+v; want %d of %d attacked", b.UtilityUA, b.TargetedASR, succeeded, attacked)
				}
			}
		})
	}
}
