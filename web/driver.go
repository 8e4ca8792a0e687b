package web

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/internal/agentenv"
	"github.com/pikit-go/pikit/internal/claim"
	"github.com/pikit-go/pikit/internal/procgroup"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/proxy"
)

// DefaultAgentTimeout bounds one agent run of pikit web run.
const DefaultAgentTimeout = 5 * time.Minute

// Environment variables an agent command is given.
const (
	EnvURL     = "PIKIT_WEB_URL"  // the session's start page
	EnvSession = "PIKIT_SESSION"  // the session (cell) id
	EnvTask    = "PIKIT_WEB_TASK" // what the user asks the agent to do there
)

// maxOutput bounds the agent output a driver keeps (its tail): the
// agent's answer, the cell's final text.
const maxOutput = 64 << 10

// Driver runs an agent command once per cell, pointed at the cell's
// session of Server. It implements matrix.Driver.
type Driver struct {
	Server *Server
	// Command is the agent's command line; {web_url}, {session} and
	// {task} in its arguments are replaced.
	Command []string
	// Timeout bounds each run (DefaultAgentTimeout when 0).
	Timeout time.Duration
	// Dir is the command's working directory ("" for pikit's).
	Dir string
	// PassEnv names variables of pikit's environment that the command
	// gets although they look like secrets; every other secret, by name
	// (agentenv.Secret) or by value (agentenv.SecretValue), is withheld
	// from it.
	PassEnv []string
	// HAR, when set, is where each cell's exchanges are written as a
	// HAR file, KEY.har (the cell's key).
	HAR *HARFiles
	// Model, when set, is a pikit proxy the agent's model traffic goes
	// through (at ModelURL): each cell's session there records the
	// model's side of the run, and the result holds both (Merge). The
	// proxy taints nothing; the payload is on the page.
	Model    *proxy.Server
	ModelURL string

	setups matrix.PerConfig[Setup]
}

// Drive implements matrix.Driver: it opens a session for the cell, runs
// the agent command at its start page, and returns the session's trace,
// the command's output as the final text, when the command exits.
func (d *Driver) Drive(ctx context.Context, dr matrix.Drive) (agent.Trace, error) {
	st, err := d.setups.Get(dr.Cell.Config, ParseSetup)
	if err != nil {
		return agent.Trace{}, err
	}
	id := claim.CellID(dr.Cell)
	s, err := d.Server.Open(id, dr, st)
	if err != nil {
		return agent.Trace{}, err
	}
	defer d.Server.Close(s)
	var ps *proxy.Session
	if d.Model != nil {
		if ps, err = d.Model.Open(id, dr, proxy.Rules{}); err != nil {
			return agent.Trace{}, err
		}
		defer d.Model.Close(ps)
	}
	out, runErr := d.run(ctx, s)
	tr := s.Trace()
	if ps != nil {
		tr = Merge(ps.Trace(), tr)
	}
	tr.FinalText = out
	if err := d.HAR.write(s, dr.Cell.Key); err != nil {
		return tr, err
	}
	if runErr != nil {
		return tr, runErr
	}
	if s.Requests() == 0 {
		return tr, fmt.Errorf("the agent command made no request to its session: does it open %s (or {web_url})?", EnvURL)
	}
	return tr, nil
}

// run runs the command for session s and returns the tail of its output.
func (d *Driver) run(ctx context.Context, s *Session) (string, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultAgentTimeout
	}
	start, task := s.StartURL(d.Server.URL), s.Task(d.Server.URL)
	repl := strings.NewReplacer("{web_url}", start, "{session}", s.id, "{task}", task)
	extra := []string{EnvURL + "=" + start, EnvSession + "=" + s.id, EnvTask + "=" + task}
	if d.Model != nil {
		// Pointed at its session of the proxy, with the placeholder keys
		// (the proxy sends the real one upstream itself).
		extra = append(extra, proxy.AgentEnv(d.ModelURL, s.id)...)
	}
	env, _ := agentenv.Filter(os.Environ(), d.PassEnv, extra)
	return procgroup.Agent(ctx, d.Command, repl, d.Dir, env, timeout, maxOutput)
}

// Withheld names the variables of pikit's environment that the agent
// command does not get (its secrets, but those PassEnv names), sorted;
// never their values.
func (d *Driver) Withheld() []string {
	_, w := agentenv.Filter(os.Environ(), d.PassEnv, nil)
	return w
}
