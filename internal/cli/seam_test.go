package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// execute runs a command built with a runF seam on args, returning the
// error and what it wrote to standard error.
func execute(t *testing.T, cmd *cobra.Command, args ...string) (error, string) {
	t.Helper()
	var errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.ExecuteContext(context.Background()), errOut.String()
}

func seamIO() (IO, *bytes.Buffer) {
	var errOut bytes.Buffer
	return IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut}, &errOut
}

// TestRunFlagsParse checks what pikit run's flags set, without running a
// cell: the Python pikit's --model and --channel none, and the checks that
// refuse a bad flag before anything runs.
func TestRunFlagsParse(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		check func(o *singleRunOptions) string
		err   string
	}{
		{args: []string{"--model", "gpt-4o-mini"}, check: func(o *singleRunOptions) string {
			if o.Target != "openai:gpt-4o-mini" {
				return "target " + o.Target
			}
			return ""
		}},
		{args: []string{"--model", "mock"}, check: func(o *singleRunOptions) string {
			if o.Target != "mock" {
				return "target " + o.Target
			}
			return ""
		}},
		{args: []string{"--agent", "email", "--attack", "combined", "--defense", "spotlighting", "--sink-args", "to=a@evil.example", "-j", "3"}, check: func(o *singleRunOptions) string {
			if o.Agent != "email" || o.Attack != "combined" || o.Defense != "spotlighting" || o.SinkArgs["to"] != "a@evil.example" || o.Concurrency != 3 {
				return "options not as given"
			}
			return ""
		}},
		{args: []string{"--model", "gpt-4o", "--target", "anthropic:claude"}, err: "--model and --target name different targets"},
		{args: []string{"--attack", "naive", "--attacks", "naive,escape"}, err: "--attack and --attacks both choose"},
		{args: []string{"--temperature", "3"}, err: "--temperature: want a number from 0 to 2"},
		{args: []string{"--judge", "oracle"}, err: `unknown judge "oracle"`},
		{args: []string{"-j", "0"}, err: "--concurrency: must be at least 1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got *singleRunOptions
			streams, _ := seamIO()
			err, _ := execute(t, newRunCmd(streams, func(_ *cobra.Command, o *singleRunOptions) error { got = o; return nil }), tc.args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || got != nil {
					t.Fatalf("error %v (ran: %v), want one with %q and no run", err, got != nil, tc.err)
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("error %v, ran %v", err, got != nil)
			}
			if msg := tc.check(got); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// TestMatrixFlagsParse checks pikit matrix's flags without running.
func TestMatrixFlagsParse(t *testing.T) {
	var got *matrixOptions
	streams, _ := seamIO()
	runF := func(_ *cobra.Command, o *matrixOptions) error { got = o; return nil }
	if err, _ := execute(t, newMatrixCmd(streams, runF), "--config", "x.toml", "-o", "r.jsonl", "--resume", "--shard", "2/3", "--rps", "5", "--max-retries", "2"); err != nil || got == nil {
		t.Fatalf("error %v, ran %v", err, got != nil)
	}
	if got.Config != "x.toml" || got.Output != "r.jsonl" || !got.Resume || got.Shard != "2/3" || got.RPS != 5 || got.MaxRetries != 2 {
		t.Errorf("config %q, output %q, resume %v, shard %q, rps %v, max retries %d", got.Config, got.Output, got.Resume, got.Shard, got.RPS, got.MaxRetries)
	}
	got = nil
	for args, want := range map[string]string{
		"-o r.jsonl":               "--config FILE.toml is required",
		"--config x.toml --rps -1": "--rps: want requests per second",
	} {
		if err, _ := execute(t, newMatrixCmd(streams, runF), strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) || got != nil {
			t.Errorf("%s: %v, want %q and no run", args, err, want)
		}
	}
}

// TestReportAndGateFlagsParse checks pikit report's and gate's flags
// without reading a file.
func TestReportAndGateFlagsParse(t *testing.T) {
	streams, _ := seamIO()
	var ro *reportOptions
	var files []string
	report := newReportCmd(streams, func(_ *cobra.Command, o *reportOptions, a []string) error { ro, files = o, a; return nil })
	if err, _ := execute(t, report, "a.jsonl", "b.csv", "--by", "attack,defense", "--format", "markdown", "--html-traces", "0"); err != nil || ro == nil {
		t.Fatalf("error %v", err)
	}
	if strings.Join(files, " ") != "a.jsonl b.csv" || strings.Join(ro.By, ",") != "attack,defense" || ro.Format != "markdown" || ro.HTMLTraces != 0 {
		t.Errorf("files %v, options %+v", files, ro)
	}
	var gate *gateOptions
	stop := errors.New("seen")
	gateCmd := newGateCmd(streams, func(_ *cobra.Command, o *gateOptions, a []string) error { gate, files = o, a; return stop })
	if err, _ := execute(t, gateCmd, "r.jsonl", "--max-asr", "0.1", "--strict", "--by", "defense", "--max-errors", "3"); !errors.Is(err, stop) || gate == nil {
		t.Fatalf("error %v", err)
	}
	if gate.MaxASR != 0.1 || !gate.Strict || strings.Join(gate.By, ",") != "defense" || gate.MaxErrors != 3 || strings.Join(files, " ") != "r.jsonl" {
		t.Errorf("files %v, options %+v", files, gate)
	}
}
