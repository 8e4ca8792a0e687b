package proxy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/internal/agentenv"
	"github.com/pikit-go/pikit/internal/claim"
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

// PlaceholderKey is the API key an agent command gets in OPENAI_API_KEY
// and ANTHROPIC_API_KEY, whatever pikit's environment holds: SDKs refuse
// to start without a key, and the proxy drops the agent's and sends
// pikit's own, to the upstream alone.
const PlaceholderKey = "pikit-proxy"

// placeholderKeys are the variables an agent gets PlaceholderKey in.
var placeholderKeys = []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}

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
	// PassEnv names variables of pikit's environment that the command
	// gets although they look like secrets (--pass-env); every other
	// secret (agentenv.Secret) is withheld from it. See CheckPassEnv.
	PassEnv []string

	rules matrix.PerConfig[Rules]
}

// Drive implements matrix.Driver: it opens a session for the cell, runs
// the agent command with its base URLs pointing at it, and returns the
// session's trace when the command exits.
func (d *Driver) Drive(ctx context.Context, dr matrix.Drive) (agent.Trace, error) {
	rules, err := d.rules.Get(dr.Cell.Config, ParseRules)
	if err != nil {
		return agent.Trace{}, err
	}
	id := claim.CellID(dr.Cell)
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
		if why := s.unanswered(); why != "" {
			return tr, fmt.Errorf("no model request of the agent command was answered: %s", why)
		}
		return tr, fmt.Errorf("the agent command sent no model request through the proxy: does it read %s or OPENAI_BASE_URL / ANTHROPIC_BASE_URL? (%d other requests passed)", EnvSession, s.Passed())
	}
	return tr, nil
}

// CheckPassEnv says why a variable cannot be passed to the agent with
// --pass-env: not a variable's name, a provider key the agent gets as a
// placeholder, or a variable the proxy sets itself.
func CheckPassEnv(name string) error {
	if !agentenv.ValidName(name) {
		return fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", name)
	}
	if slices.Contains(placeholderKeys, name) {
		return fmt.Errorf("the agent gets %s=%s, a placeholder, always: the proxy drops the agent's key and sends yours to the upstream itself, so the agent never needs the real one (and a client that bypassed the proxy would spend it)", name, PlaceholderKey)
	}
	for _, kv := range Env("", "") {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			return fmt.Errorf("the proxy sets %s for each run of the agent itself", name)
		}
	}
	return nil
}

// environ returns the environment of the agent command: pikit's without
// its secrets (but those PassEnv names), then proxy (the variables that
// point it at its session) and the placeholder keys. withheld names what
// the agent does not get, sorted: never values.
func (d *Driver) environ(proxy []string) (env, withheld []string) {
	extra := append(slices.Clone(proxy), placeholderVars()...)
	env, dropped := agentenv.Filter(os.Environ(), d.PassEnv, extra)
	// A base URL the proxy replaces with its own is not withheld; a key
	// it replaces with the placeholder is.
	set := map[string]bool{}
	for _, kv := range proxy {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	for _, k := range dropped {
		if !set[k] {
			withheld = append(withheld, k)
		}
	}
	return env, withheld
}

// Withheld names the variables of pikit's environment that the agent
// command does not get (its secrets, but those PassEnv names), sorted;
// never their values.
func (d *Driver) Withheld() []string {
	_, w := d.environ(Env("", ""))
	return w
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

// placeholderVars set each provider's key variable to PlaceholderKey.
func placeholderVars() []string {
	out := make([]string, len(placeholderKeys))
	for i, k := range placeholderKeys {
		out[i] = k + "=" + PlaceholderKey
	}
	return out
}

// AgentEnv is what an agent pointed at session id of the proxy at base
// gets: Env, and the placeholder keys.
func AgentEnv(base, id string) []string {
	return append(Env(base, id), placeholderVars()...)
}

// maxOutput bounds the agent output a driver keeps (its tail).
const maxOutput = 64 << 10

// run runs the command for session id and returns the tail of its output.
func (d *Driver) run(ctx context.Context, id string) (string, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultAgentTimeout
	}
	env := Env(d.URL, id)
	repl := strings.NewReplacer("{session}", id, "{openai_base_url}", strings.TrimPrefix(env[0], "OPENAI_BASE_URL="),
		"{anthropic_base_url}", strings.TrimPrefix(env[1], "ANTHROPIC_BASE_URL="))
	environ, _ := d.environ(env)
	return procgroup.Agent(ctx, d.Command, repl, d.Dir, environ, timeout, maxOutput)
}
