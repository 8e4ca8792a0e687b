// Package pyvenv makes the Python virtual environments the test suites
// install real software into (agent frameworks, benchmarks' own code,
// moto, kubectl): once per set of pinned requirements, cached in the
// user's cache directory. It is for tests; the pikit binary never uses it.
package pyvenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Make makes (or finds) a virtual environment with requirements (the text
// of a requirements file) installed by pip with pipArgs, and returns its
// directory, or why it could not. It lives in the user's cache directory
// under name and the requirements' hash, or at the directory the
// variable env names when it is set; a finished one holds .pikit-ready.
func Make(name, env string, requirements []byte, pipArgs ...string) (dir, why string) {
	sys, err := exec.LookPath("python3")
	if err != nil {
		return "", "python3 is not on PATH; the suite needs Python 3.9+ and PyPI"
	}
	dir = os.Getenv(env)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		sum := sha256.Sum256(requirements)
		dir = filepath.Join(cache, "pikit", name+"-"+hex.EncodeToString(sum[:6]))
	}
	ready := filepath.Join(dir, ".pikit-ready")
	if _, err := os.Stat(ready); err == nil {
		return dir, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, sys, "-m", "venv", "--clear", dir).CombinedOutput(); err != nil {
		return "", "creating a virtual environment failed: " + LastLines(out)
	}
	req := filepath.Join(dir, "requirements.txt")
	if err := os.WriteFile(req, requirements, 0o644); err != nil {
		return "", err.Error()
	}
	args := append([]string{"-m", "pip", "install", "--disable-pip-version-check", "-q"}, pipArgs...)
	pip := exec.CommandContext(ctx, filepath.Join(dir, "bin", "python"), append(args, "-r", req)...)
	if out, err := pip.CombinedOutput(); err != nil {
		return "", "pip install of the " + name + " requirements failed (is PyPI reachable?): " + LastLines(out)
	}
	if err := os.WriteFile(ready, requirements, 0o644); err != nil {
		return "", err.Error()
	}
	return dir, ""
}

// LastLines keeps the last five lines of a command's output, joined, for
// a message.
func LastLines(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}
