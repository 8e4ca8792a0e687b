// Package realtest is the one switch of the test suites that install and
// run software pikit did not write (agent frameworks, benchmarks' own
// code, agent runtimes, a local model, Chromium, moto, kubectl): they run
// when PIKIT_REAL=1 (make test-all, .ci/run), and then anything they
// cannot install or reach is a failure. Without it `go test ./...` runs
// the hermetic tests alone: nothing installed, no network but loopback.
package realtest

import (
	"os"
	"testing"
)

// Env is the variable that turns the real-software suites on.
const Env = "PIKIT_REAL"

// Enabled reports whether the real-software suites run.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Why is what a skipped suite says: what it would install, and how to run
// it.
func Why(what string) string {
	return what + " installs and runs real software; run it with " + Env + "=1 (make test-all)"
}

// Skip skips t unless the real-software suites run.
func Skip(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skip(Why(what))
	}
}
