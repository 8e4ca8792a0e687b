package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests drive the built binary the way a user does: signals, kills
// and resumes.

// The binary, built once for the package's tests (TestMain removes it).
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// build returns the pikit binary, building it on first use.
func build(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "pikit-bin-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "pikit")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// A plan large enough to still be running when the test interrupts it.
const bigPlan = "attacks = [\"*\"]\ndefenses = [\"*\"]\nagents = [\"chat\", \"email\"]\nrepeats = 60\n"

// waitLines waits until path holds at least n newlines (or the deadline).
func waitLines(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		b, _ := os.ReadFile(path)
		if strings.Count(string(b), "\n") >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached %d lines", path, n)
		}
	}
}

// lines checks that every line of path is a complete JSON result and
// returns how often each key occurs.
func lines(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var r struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Key == "" {
			t.Fatalf("line %d is not a complete result: %v", n, err)
		}
		keys[r.Key]++
	}
	return keys
}

// TestSignalStopsCleanly: SIGINT (Ctrl-C) and SIGTERM (what a CI runner or
// Kubernetes sends) both stop a run with exit 130 and valid results on
// disk, and --resume finishes it without repeating a cell.
func TestSignalStopsCleanly(t *testing.T) {
	bin := build(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { signalStopsCleanly(t, bin, sig) })
	}
}

func signalStopsCleanly(t *testing.T, bin string, sig syscall.Signal) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "big.toml")
	os.WriteFile(cfg, []byte(bigPlan), 0o644)
	out := filepath.Join(dir, "res.jsonl")
	cmd := exec.Command(bin, "matrix", "-c", cfg, "-o", out, "-q")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitLines(t, out, 100)
	sent := time.Now()
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	took := time.Since(sent)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, stderr.String())
	}
	if took > 5*time.Second {
		t.Errorf("took %v to stop after %v", took, sig)
	}
	keys := lines(t, out)
	if len(keys) == 0 || !strings.Contains(stderr.String(), "interrupted after") || !strings.Contains(stderr.String(), "--resume") {
		t.Errorf("%d results; stderr:\n%s", len(keys), stderr.String())
	}
	t.Logf("stopped %v after %v with %d results on disk", took, sig, len(keys))

	// Resume finishes the plan without repeating a cell.
	res, err := exec.Command(bin, "matrix", "-c", cfg, "-o", out, "--resume", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, res)
	}
	after := lines(t, out)
	if want := planned(t, bin, cfg); len(after) != want {
		t.Fatalf("%d results after resume, want the %d planned", len(after), want)
	}
	for k, n := range after {
		if n != 1 {
			t.Fatalf("key %s appears %d times after resume", k, n)
		}
	}
}

func TestKillAndResume(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "big.toml")
	os.WriteFile(cfg, []byte(bigPlan), 0o644)
	out := filepath.Join(dir, "res.jsonl")
	planned := planned(t, bin, cfg)
	cmd := exec.Command(bin, "matrix", "-c", cfg, "-o", out, "-q")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitLines(t, out, 2000)
	cmd.Process.Kill() // no chance to flush or clean up
	cmd.Wait()
	res, err := exec.Command(bin, "matrix", "-c", cfg, "-o", out, "--resume", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, res)
	}
	if !strings.Contains(string(res), "resuming") {
		t.Errorf("no resume message:\n%s", res)
	}
	keys := lines(t, out)
	if len(keys) != planned {
		t.Errorf("%d keys after resume, want the %d planned", len(keys), planned)
	}
	for k, n := range keys {
		if n != 1 {
			t.Fatalf("key %s appears %d times", k, n)
		}
	}
}

// planned asks the binary how many cells a config plans.
func planned(t *testing.T, bin, cfg string) int {
	t.Helper()
	dry, err := exec.Command(bin, "matrix", "-c", cfg, "--dry-run").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(dry), "\n") {
		if strings.HasPrefix(l, "cells:") {
			return atoi(strings.TrimSpace(strings.TrimPrefix(l, "cells:")))
		}
	}
	t.Fatalf("no cell count in:\n%s", dry)
	return 0
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// TestSignalWithNothingInFlight (issue 20, item 12): a phase with no cell
// in flight (here a report reading a pipe nobody writes to) ends at the
// first SIGTERM, with exit 130, instead of waiting for cells that do not
// exist.
func TestSignalWithNothingInFlight(t *testing.T) {
	bin := build(t)
	fifo := filepath.Join(t.TempDir(), "results.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes: %v", err)
	}
	cmd := exec.Command(bin, "report", fifo)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let it block on the pipe
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("exit %v, want 130\n%s", err, stderr.String())
		}
		if strings.Contains(stderr.String(), "finishing cells in flight") {
			t.Errorf("said it was finishing cells it did not have:\n%s", stderr.String())
		}
		t.Logf("stopped %v after SIGTERM", time.Since(sent))
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running 5s after SIGTERM\n%s", stderr.String())
	}
}

// TestStartupIsCheap (issue 24): nothing expensive runs at init — the
// packages' regular expressions compile on first use (internal/lazy).
// Allocation at init is what the Go runtime reports with
// GODEBUG=inittrace=1: 7.1 MB when every pattern compiled at start-up,
// 1.3 MB since; the bound leaves room for dependencies.
func TestStartupIsCheap(t *testing.T) {
	bin := build(t)
	cmd := exec.Command(bin, "--help")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, line := range strings.Split(stderr.String(), "\n") {
		f := strings.Fields(line) // init PKG @T ms, C ms clock, B bytes, N allocs
		if len(f) >= 9 && f[0] == "init" && f[8] == "bytes," {
			n, err := strconv.Atoi(f[7])
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			total += n
		}
	}
	if total == 0 {
		t.Fatalf("no init trace read:\n%s", stderr.String())
	}
	t.Logf("%d bytes allocated at init", total)
	if total > 3<<20 {
		t.Errorf("%d bytes allocated at init, over 3 MiB: compile patterns on first use (internal/lazy)", total)
	}
}
