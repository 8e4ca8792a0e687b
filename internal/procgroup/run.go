package procgroup

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ErrTimeout is wrapped by Run's error when the command ran out of time.
var ErrTimeout = errors.New("did not finish in time")

// waitDelay bounds the wait for a command's output once it has exited
// (or been killed): a child it left running in the background may hold
// its output open for as long as it lives.
const waitDelay = time.Second

// Run runs cmd in a process group of its own for at most timeout, keeping
// the last maxOutput bytes of its standard output, which it returns. When
// the command exits, whatever it left running in its group is killed;
// when the time is up or ctx is done, the whole group is. The error says
// how a run that did not succeed ended, with the tail of its standard
// error; it wraps ErrTimeout after a timeout and ctx's error after a
// cancel.
func Run(ctx context.Context, cmd *exec.Cmd, timeout time.Duration, maxOutput int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stdout, stderr := NewTail(maxOutput), NewTail(maxOutput)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	Set(cmd)
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
		Kill(cmd)
		if errors.Is(err, exec.ErrWaitDelay) {
			// It exited 0, leaving children that held its output.
			err = nil
		}
	case <-ctx.Done():
		// The whole process group: an agent's own children go too.
		Kill(cmd)
		<-done
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return stdout.String(), fmt.Errorf("the agent command %w within %s; killed", ErrTimeout, timeout)
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

// Agent runs an agent's command line once: its arguments with repl's
// placeholders replaced, in dir ("" for this process's), with env, for
// at most timeout. It returns the tail of the command's standard output
// (at most maxOutput bytes), and says how a run that did not succeed
// ended; a timeout names --agent-timeout, the flag that sets it.
func Agent(ctx context.Context, command []string, repl *strings.Replacer, dir string, env []string, timeout time.Duration, maxOutput int) (string, error) {
	argv := make([]string, len(command))
	for i, a := range command {
		argv[i] = repl.Replace(a)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	out, err := Run(ctx, cmd, timeout, maxOutput)
	if errors.Is(err, ErrTimeout) {
		return out, fmt.Errorf("the agent command did not finish within %s (--agent-timeout); killed", timeout)
	}
	return out, err
}
