package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/internal/procgroup"
	"github.com/pikit-go/pikit/matrix"
)

// DefaultAgentTimeout bounds one agent run of pikit proxy run.
const DefaultAgentTimeout = 5 * time.Minute

// Environment variables an agent command is given.
const (
	EnvSession = "PIKIT_SESSION"   // the session (cell) id
	EnvProxy   = "PIKIT_PROXY_URL" // the proxy's address
)

// Driver runs an agent command once per cell, its model traffic through
// the proxy. It implements matrix.Driver.
type Driver struct {
	Server *Server
	// URL is the proxy's address ("http://127.0.0.1:PORT").
	URL string
	// Command is the agent's command line; {session}, {openai_base_url}
	// and {anthropic_base_url} in its arguments are replaced.
	Command []string
	// Timeout bounds each run (DefaultAgentTimeout when 0).
	Timeout time.Duration
	// Dir is the command's working directory ("" for pikit's).
	Dir string

	rules ruleCache
}

// Drive implements matrix.Driver: it opens a session for the cell, runs
// the agent command with its base URLs pointing at it, and returns the
// session's trace when the command exits.
func (d *Driver) Drive(ctx context.Context, dr matrix.Drive) (agent.Trace, error) {
	rules, err := d.rules.get(dr.Cell.Config)
	if err != nil {
		return agent.Trace{}, err
	}
	id := sessionID(dr.Cell)
	s, err := d.Server.Open(id, dr, rules)
	if err != nil {
		return agent.Trace{}, err
	}
	defer d.Server.Close(s)
	out, runErr := d.run(ctx, id)
	tr := s.Trace()
	if tr.FinalText == "" {
		tr.FinalText = out
	}
	if runErr != nil {
		return tr, runErr
	}
	if tr.ModelCalls == 0 {
		if errs := s.Errors(); len(errs) > 0 {
			return tr, fmt.Errorf("no model request of the agent command was answered (%d failed): %s", len(errs), errs[0])
		}
		return tr, fmt.Errorf("the agent command sent no model request through the proxy: does it read %s or OPENAI_BASE_URL / ANTHROPIC_BASE_URL? (%d other requests passed)", EnvSession, s.Passed())
	}
	return tr, nil
}

// ruleCache parses each config's [proxy] rules once; the drivers share
// it between their workers.
type ruleCache struct {
	mu    sync.Mutex
	rules map[*matrix.Config]Rules
}

func (c *ruleCache) get(cfg *matrix.Config) (Rules, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.rules[cfg]; ok {
		return r, nil
	}
	r, err := ParseRules(cfg)
	if err != nil {
		return r, err
	}
	if c.rules == nil {
		c.rules = map[*matrix.Config]Rules{}
	}
	c.rules[cfg] = r
	return r, nil
}

// Env returns the variables that point an agent at session id of the
// proxy at base.
func Env(base, id string) []string {
	return []string{
		"OPENAI_BASE_URL=" + base + "/s/" + id + "/v1",
		"ANTHROPIC_BASE_URL=" + base + "/s/" + id,
		EnvSession + "=" + id,
		EnvProxy + "=" + base,
	}
}

// maxOutput bounds the agent output a driver keeps (its tail).
const maxOutput = 64 << 10

// waitDelay bounds the wait for the agent's output once it has exited (or
// been killed): a child it left running in the background may hold its
// output open for as long as it lives.
const waitDelay = time.Second

// run runs the command for session id and returns the tail of its output.
func (d *Driver) run(ctx context.Context, id string) (string, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultAgentTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	env := Env(d.URL, id)
	repl := strings.NewReplacer("{session}", id, "{openai_base_url}", strings.TrimPrefix(env[0], "OPENAI_BASE_URL="),
		"{anthropic_base_url}", strings.TrimPrefix(env[1], "ANTHROPIC_BASE_URL="))
	argv := make([]string, len(d.Command))
	for i, a := range d.Command {
		argv[i] = repl.Replace(a)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = d.Dir
	cmd.Env = append(os.Environ(), env...)
	if os.Getenv("OPENAI_API_KEY") == "" {
		// SDKs refuse to start without a key; the proxy sends the real one
		// (or none) itself.
		cmd.Env = append(cmd.Env, "OPENAI_API_KEY=pikit-proxy")
	}
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY=pikit-proxy")
	}
	stdout, stderr := procgroup.NewTail(maxOutput), procgroup.NewTail(maxOutput)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	procgroup.Set(cmd)
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting the agent command: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
		// The run is over, however it ended: whatever the agent left
		// running in its process group goes with it.
		procgroup.Kill(cmd)
		if errors.Is(err, exec.ErrWaitDelay) {
			// It exited 0, leaving children that held its output.
			err = nil
		}
	case <-ctx.Done():
		// The whole process group: an agent's own children go too.
		procgroup.Kill(cmd)
		<-done
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return stdout.String(), fmt.Errorf("the agent command did not finish within %s (--agent-timeout); killed", timeout)
		}
		return stdout.String(), ctx.Err()
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		return stdout.String(), fmt.Errorf("the agent command failed (%v): %s", err, msg)
	}
	return stdout.String(), nil
}

// sessionID names a cell's session: its key and random bits, so a late
// request of an earlier run of the same cell finds no session.
func sessionID(c matrix.Cell) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return c.Key + "-" + hex.EncodeToString(b[:])
}
