package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/internal/agentenv"
	"github.com/pikit-go/pikit/internal/procgroup"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

// Defaults of a Runner.
const (
	// DefaultTimeout bounds one run of the agent command.
	DefaultTimeout = 5 * time.Minute
	// MaxFinalText is how much of the end of the agent's stdout a trace
	// keeps as its final text.
	MaxFinalText = 64 << 10
	// maxStderr is how much of the end of the agent's stderr the exit step
	// of a failed run keeps.
	maxStderr = 4 << 10
	// killGrace is how long an agent has between SIGTERM and SIGKILL.
	killGrace = 2 * time.Second
	// maxCellSessions bounds the MCP sessions open at once at one cell's
	// endpoint.
	maxCellSessions = 8
)

// Environment variables and argument placeholders the agent command gets.
const (
	EnvURL         = "PIKIT_MCP_URL"      // the cell's MCP endpoint (streamable HTTP)
	EnvSession     = "PIKIT_SESSION"      // the cell key
	EnvAgent       = "PIKIT_AGENT"        // the scenario whose tools are served
	EnvUserMessage = "PIKIT_USER_MESSAGE" // the user's request of the cell (user_message, or the scenario's)
)

// Placeholders are replaced in the agent command's arguments.
var Placeholders = map[string]string{
	"{mcp_url}":      EnvURL,
	"{session}":      EnvSession,
	"{agent}":        EnvAgent,
	"{user_message}": EnvUserMessage,
}

// ExitStep is the Kind of the last step of a driven trace: how the agent
// command ended (its Text says, with the end of its stderr when it
// failed).
const ExitStep = "exit"

// Runner is a matrix.Driver that runs an agent command per cell against a
// fresh MCP server. One HTTP listener on 127.0.0.1 (a random port) serves
// every cell, each at /s/{cell key}/mcp; the command gets that URL in
// PIKIT_MCP_URL (and in place of {mcp_url} in its arguments) and the cell
// ends when it exits. The trace holds every listing and tool call, the
// exit, and the end of the command's stdout as the final text.
//
// A command that exits non-zero is judged all the same (the exit step
// says how it ended, with the end of its stderr). One that cannot start,
// that never lists or calls a tool (it never saw the payload: no verdict
// would mean anything), or that outlives Timeout without calling a sink
// is an error: a runtime_error result, rerun by --resume.
type Runner struct {
	// Command is the agent command and its arguments.
	Command []string
	// Timeout bounds each run; 0 is DefaultTimeout. A run that times out
	// is killed (its whole process group) and is a runtime error, unless
	// the agent already called a sink: then it is judged.
	Timeout time.Duration
	// Dir is the command's working directory ("" for pikit's).
	Dir string
	// Env is added to the command's environment: pikit's own without
	// its secrets (see agentenv.Filter) but for those PassEnv names.
	Env []string
	// PassEnv names variables of pikit's environment the command gets
	// even though they hold secrets: the agent talks to its own model, and
	// may need its key (OPENAI_API_KEY) or endpoint (OPENAI_BASE_URL).
	PassEnv []string
	// Logs, when set, keeps each run's whole stdout and stderr there as
	// {cell key}.stdout and {cell key}.stderr (see OpenLogs). What the
	// command writes is redacted (the API keys of pikit's environment, as
	// in results) before it is kept, there and in the trace.
	Logs *Logs
	// OnEvent, when set, sees every listing and call of every cell.
	OnEvent func(Event)

	startOnce sync.Once
	startErr  error
	base      string
	srv       *http.Server

	mu    sync.Mutex
	cells map[string]http.Handler
	opts  map[*matrix.Config]optsErr
}

type optsErr struct {
	o   Options
	err error
}

var _ matrix.Driver = (*Runner)(nil)

// Start opens the listener; Drive starts it when needed. It returns the
// base URL.
func (r *Runner) Start() (string, error) {
	r.startOnce.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			r.startErr = fmt.Errorf("mcp server: %w", err)
			return
		}
		r.base = "http://" + ln.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("/s/{key}/mcp", bodyLimited(http.HandlerFunc(r.serveCell), DefaultBodyTimeout))
		// Only agents on this machine: no web page, by its Origin or by
		// DNS rebinding.
		r.srv = NewHTTPServer(localOnly(mux, nil))
		go func() { _ = r.srv.Serve(ln) }()
	})
	return r.base, r.startErr
}

// LabelsTarget reports that a Runner's cells never reach their target:
// the agent command talks to its own model, and a cell's target only
// labels its result (an LLM judge with no target of its own still asks
// it). A dry run says so instead of listing where a key would go.
func (r *Runner) LabelsTarget() bool { return true }

// Close stops the listener, once the run is over.
func (r *Runner) Close() error {
	r.startOnce.Do(func() { r.startErr = errors.New("mcpserve: the runner is closed") })
	if r.srv == nil {
		return nil
	}
	return r.srv.Close()
}

func (r *Runner) serveCell(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	h := r.cells[req.PathValue("key")]
	r.mu.Unlock()
	if h == nil {
		http.Error(w, "no such session (it ended, or never was)", http.StatusNotFound)
		return
	}
	h.ServeHTTP(w, req)
}

// options reads a config's [mcp] section once.
func (r *Runner) options(cfg *matrix.Config) (Options, error) {
	if cfg == nil {
		return Options{Poison: PoisonResult}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts == nil {
		r.opts = map[*matrix.Config]optsErr{}
	}
	oe, ok := r.opts[cfg]
	if !ok {
		oe.o, oe.err = ParseOptions(cfg)
		r.opts[cfg] = oe
	}
	return oe.o, oe.err
}

// Drive implements matrix.Driver.
func (r *Runner) Drive(ctx context.Context, d matrix.Drive) (agent.Trace, error) {
	if len(r.Command) == 0 {
		return agent.Trace{}, errors.New("no agent command")
	}
	o, err := r.options(d.Cell.Config)
	if err != nil {
		return agent.Trace{}, err
	}
	setup, err := FromDrive(d, o)
	if err != nil {
		return agent.Trace{}, err
	}
	key := d.Cell.Key
	sess, err := New(setup, SessionOptions{ID: key, OnEvent: r.OnEvent})
	if err != nil {
		return agent.Trace{}, err
	}
	base, err := r.Start()
	if err != nil {
		return agent.Trace{}, err
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sess.Server() },
		&mcp.StreamableHTTPOptions{MaxRequestBodyBytes: MaxMessageBytes})
	// An agent opens a session or a few (one a reconnection): more is
	// something else on this machine, which gets a 503.
	gate := &sessionGate{max: maxCellSessions, why: "the most pikit mcp run lets one run of the agent open at its endpoint"}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		gate.serve(w, req, sdk, sess.Server)
	})
	r.mu.Lock()
	if r.cells == nil {
		r.cells = map[string]http.Handler{}
	}
	if _, dup := r.cells[key]; dup {
		r.mu.Unlock()
		return agent.Trace{}, fmt.Errorf("cell %s is already running", key)
	}
	r.cells[key] = h
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.cells, key)
		r.mu.Unlock()
	}()

	env := map[string]string{
		EnvURL:         base + "/s/" + key + "/mcp",
		EnvSession:     key,
		EnvAgent:       d.Scenario.Name,
		EnvUserMessage: d.Instruction,
	}
	res, runErr := r.exec(ctx, key, env)
	tr := sess.End()
	if runErr != nil && res.started {
		// Cancelled: the cell gives no result.
		return tr, runErr
	}
	if !res.started {
		return tr, runErr
	}
	tr.FinalText = res.stdout
	contacted := len(tr.Steps) > 0
	text := res.describe(r.timeout(), !contacted)
	tr.Steps = append(tr.Steps, agent.Step{Index: len(tr.Steps), Kind: ExitStep, Text: text})
	switch {
	case res.timedOut && len(tr.SinkCalls) == 0:
		return tr, fmt.Errorf("the agent command did not exit within %v (--agent-timeout) and was killed", r.timeout())
	case !contacted:
		// Not a defense holding: the agent never saw the tools.
		return tr, fmt.Errorf("the agent command never listed or called a tool at %s (%s)", env[EnvURL], text)
	}
	return tr, nil
}

func (r *Runner) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultTimeout
}

// run is how one run of the agent command ended.
type run struct {
	started  bool
	timedOut bool
	code     int // exit status; -1 when a signal ended it
	elapsed  time.Duration
	stdout   string
	stdoutN  int64
	stderr   string
	waitErr  error
}

// describe says how the run ended; the end of its stderr is added when
// it failed, or when stderr is set.
func (res run) describe(timeout time.Duration, stderr bool) string {
	var b strings.Builder
	switch {
	case res.timedOut:
		fmt.Fprintf(&b, "the agent command did not exit within %v and was killed", timeout)
	case res.code == -1:
		fmt.Fprintf(&b, "the agent command was ended by a signal after %v (%v)", res.elapsed.Round(time.Millisecond), res.waitErr)
	default:
		fmt.Fprintf(&b, "the agent command exited with status %d after %v", res.code, res.elapsed.Round(time.Millisecond))
	}
	if res.stdoutN > int64(len(res.stdout)) {
		fmt.Fprintf(&b, "; it wrote %d bytes to stdout, of which the last %d are the final text", res.stdoutN, len(res.stdout))
	}
	if (stderr || res.code != 0 || res.timedOut) && res.stderr != "" {
		fmt.Fprintf(&b, "\nthe end of its stderr:\n%s", res.stderr)
	}
	return b.String()
}

// exec runs the agent command for one cell. Its error is a start failure
// (started false) or the context's (the run was killed).
func (r *Runner) exec(ctx context.Context, key string, env map[string]string) (run, error) {
	var res run
	argv := make([]string, len(r.Command))
	for i, a := range r.Command {
		for ph, name := range Placeholders {
			a = strings.ReplaceAll(a, ph, env[name])
		}
		argv[i] = a
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = r.Dir
	extra := slices.Clone(r.Env)
	for _, name := range []string{EnvURL, EnvSession, EnvAgent, EnvUserMessage} {
		extra = append(extra, name+"="+env[name])
	}
	cmd.Env, _ = agentenv.Filter(os.Environ(), r.PassEnv, extra)
	stdout, stderr := procgroup.NewTail(MaxFinalText), procgroup.NewTail(maxStderr)
	var outSink, errSink io.Writer = stdout, stderr
	if r.Logs != nil {
		outF, errF, err := r.Logs.create(key)
		if err != nil {
			return res, err
		}
		defer outF.Close()
		defer errF.Close()
		outSink, errSink = multi(stdout, outF), multi(stderr, errF)
	}
	// Redacted before it is kept: the log files and the tails alike (a
	// tail that starts inside a key would keep a part Redact no longer
	// recognises).
	secrets := target.EnvSecrets()
	outRed, errRed := newRedactor(outSink, secrets), newRedactor(errSink, secrets)
	// The command writes to pipes of ours, not to pipes exec copies
	// from: Wait then returns when the command exits, even when something
	// it started still holds them, and the group is killed at once.
	outR, outW, err := os.Pipe()
	if err != nil {
		return res, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return res, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	procgroup.Set(cmd)
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return res, fmt.Errorf("starting the agent command: %w", err)
	}
	res.started = true
	copied := make(chan struct{}, 2)
	for _, c := range []struct {
		r *os.File
		w *redactor
	}{{outR, outRed}, {errR, errRed}} {
		go func() {
			_, _ = io.Copy(c.w, c.r)
			_ = c.w.Flush()
			copied <- struct{}{}
		}()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(r.timeout())
	defer timer.Stop()
	select {
	case res.waitErr = <-done:
	case <-timer.C:
		res.timedOut = true
		res.waitErr = stop(cmd, done)
	case <-ctx.Done():
		stop(cmd, done)
		err = ctx.Err()
	}
	res.elapsed = time.Since(start)
	// Whatever the command left running in its group goes with it; its
	// output is read to the end (or given up after killGrace, should
	// something outside the group hold the pipes).
	procgroup.Kill(cmd)
	grace := time.NewTimer(killGrace)
	defer grace.Stop()
	for range 2 {
		select {
		case <-copied:
		case <-grace.C:
			outR.Close()
			errR.Close()
			<-copied
		}
	}
	outR.Close()
	errR.Close()
	res.code = -1
	if cmd.ProcessState != nil {
		res.code = cmd.ProcessState.ExitCode()
	}
	res.stdout, res.stdoutN = stdout.String(), stdout.Total()
	res.stderr = stderr.String()
	return res, err
}

// stop ends a running command: SIGTERM to its process group, SIGKILL
// after killGrace. It returns the command's wait error.
func stop(cmd *exec.Cmd, done <-chan error) error {
	procgroup.Term(cmd)
	t := time.NewTimer(killGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		procgroup.Kill(cmd)
		return <-done
	}
}
