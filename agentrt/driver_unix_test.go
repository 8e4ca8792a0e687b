//go:build unix

package agentrt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pikit-go/pikit/agentrt/agenttest"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

func TestDriverTimeoutKillsTheProcessGroup(t *testing.T) {
	defer func(g time.Duration) { killGrace = g }(killGrace)
	killGrace = 200 * time.Millisecond
	pidFile := filepath.Join(t.TempDir(), "pid")
	opts := agenttest.Options(agenttest.ModeSleep, map[string]string{agenttest.EnvPIDFile: pidFile})
	opts["timeout"] = 0.5
	cells := plan(t, `attacks = ["naive"]`, "command", opts)
	start := time.Now()
	res := runCells(t, cells)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the cell took %v", took)
	}
	r := res[0]
	if r.Outcome != judge.RuntimeError || !strings.Contains(r.Error, "ran over its timeout of 500ms; its process group was killed") {
		t.Fatalf("outcome %s, error %q", r.Outcome, r.Error)
	}
	checkDead(t, pidFile)
}

// checkDead fails unless the process whose id is in pidFile has ended.
func checkDead(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	// SIGKILL is delivered asynchronously, and the process is not ours to
	// wait for: give it a moment to die.
	for deadline := time.Now().Add(3 * time.Second); alive(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the agent's child %d (which ignores SIGTERM) outlived the cell", pid)
	}
}

func TestDriverAgentLeavingAChildSucceeds(t *testing.T) {
	defer func(g time.Duration) { killGrace = g }(killGrace)
	killGrace = 200 * time.Millisecond
	pidFile := filepath.Join(t.TempDir(), "pid")
	cells := plan(t, `attacks = ["naive"]`, "command", agenttest.Options(agenttest.ModeLinger, map[string]string{agenttest.EnvPIDFile: pidFile}))
	r := runCells(t, cells)[0]
	if r.Error != "" || r.FinalText != "Done, and a helper keeps running." {
		t.Fatalf("error %q, final %q", r.Error, r.FinalText)
	}
	checkDead(t, pidFile)
}

// alive reports whether a process runs (a zombie waiting for its reaper
// does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return runtime.GOOS != "linux"
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// TestDriverInterruptIsAResult: an agent still running when the run is
// cancelled is ended and its cell written as interrupted, never lost.
func TestDriverInterruptIsAResult(t *testing.T) {
	defer func(g time.Duration) { killGrace = g }(killGrace)
	killGrace = 100 * time.Millisecond
	cells := plan(t, `attacks = ["naive"]`, "command", agenttest.Options(agenttest.ModeSleep, map[string]string{agenttest.EnvPIDFile: filepath.Join(t.TempDir(), "pid")}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var got []matrix.Result
	err := matrix.Runner{Driver: &Driver{}}.Run(ctx, cells, func(r matrix.Result) error { got = append(got, r); return nil })
	if !errors.Is(err, matrix.ErrInterrupted) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want one wrapping matrix.ErrInterrupted and context.DeadlineExceeded", err)
	}
	if len(got) != 1 || got[0].Outcome != judge.RuntimeError || !strings.HasPrefix(got[0].Error, "interrupted") {
		t.Fatalf("an interrupted cell gave %d results: %+v", len(got), got)
	}
}
