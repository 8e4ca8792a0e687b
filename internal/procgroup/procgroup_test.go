//go:build unix

package procgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillEndsWhatTheCommandStarted starts a shell that leaves a sleeping
// child behind and checks that Kill ends the child too.
func TestKillEndsWhatTheCommandStarted(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $! > "+pidFile+"; wait")
	Set(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(5 * time.Second); pid == 0; {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if pid == 0 && time.Now().After(deadline) {
			t.Fatal("the shell never wrote its child's pid")
		}
		time.Sleep(10 * time.Millisecond) // polling a file another process writes
	}
	Kill(cmd)
	_ = cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d outlived Kill", pid)
		}
		time.Sleep(10 * time.Millisecond) // not our child: nothing to wait on
	}
}
