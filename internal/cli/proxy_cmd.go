package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/proxy"
)

// proxySkip are the run flags that would do nothing behind the proxy: the
// agent chooses its own sampling, retries and timeouts, raw model traffic
// is not cached, and the proxy relays answers under its own bounds.
var proxySkip = []string{"temperature", "cache", "max-retries", "request-timeout", "rps", "max-response-bytes"}

type proxyOptions struct {
	runOptions
	Config       string
	Dataset      string
	Listen       string
	Upstream     string
	AgentTimeout time.Duration
	IdleTimeout  time.Duration
	PassEnv      []string
}

func newProxyCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Test your own agent: intercept its model traffic and taint its tool results",
		Long: `pikit proxy sits between an agent and its model. The agent's base URL
(OPENAI_BASE_URL, ANTHROPIC_BASE_URL or its own setting) points at the
proxy, which forwards each request to the model and relays the answer,
streamed or not (OpenAI Chat Completions, OpenAI Responses, Anthropic
Messages). On the way, it rewrites the tool results the config's [proxy]
taint rules select with the cell's crafted payload, and records the tool
calls the model asks for; calls of [proxy] sinks are sink attempts.

The proxy executes nothing: the agent runs its own tools. It sends your
API key (from the environment) only to the upstream you name, follows no
redirect with it, and never writes it; it answers only requests for its
own address from this machine (a web page's cross-site request, or one
through DNS rebinding, gets 403).`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(newProxyRunCmd(streams), newProxyServeCmd(streams))
	return cmd
}

func (o *proxyOptions) addProxyFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&o.Config, "config", "c", "", "experiment config `FILE` (TOML) with a [proxy] section")
	f.StringVar(&o.Dataset, "dataset", "", "run a dataset's cases instead of a config (`NAME|FILE.toml`; a case may carry its own [proxy] rules as proxy = {...})")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "address the proxy listens on (port 0: any free port)")
	f.StringVar(&o.Upstream, "upstream", "", "base URL of the model API to forward to (the same as --base-url)")
	o.addFlags(cmd, true, proxySkip...)
}

// load reads the config (or dataset) and plans it for an external agent.
func (o *proxyOptions) load(cmd *cobra.Command) (matrix.Source, error) {
	if (o.Config == "") == (o.Dataset == "") {
		return nil, usage(errors.New("give one of --config FILE.toml and --dataset NAME|FILE.toml"))
	}
	if o.Upstream != "" {
		if o.BaseURL != "" && o.BaseURL != o.Upstream {
			return nil, usage(errors.New("--upstream and --base-url name different URLs; give one"))
		}
		o.BaseURL = o.Upstream
	}
	if err := o.complete(cmd); err != nil {
		return nil, err
	}
	// prepare marks a config as driven by the proxy and checks its rules
	// and upstream before anything runs.
	prepare := func(cfg *matrix.Config) error {
		o.applyCase(cfg)
		cfg.Driven = "proxy"
		if _, err := proxy.ParseRules(cfg); err != nil {
			return err
		}
		if err := (&proxy.Server{BaseURL: o.BaseURL}).Check(cfg); err != nil {
			return fmt.Errorf("%s: %w", cfg.Source, err)
		}
		return nil
	}
	if o.Dataset != "" {
		ds, err := dataset.LoadAnyMax(o.Dataset, int64(o.MaxFileSize))
		if err != nil {
			return nil, usage(err)
		}
		if dataset.IsFile(o.Dataset) {
			o.inputs = []string{o.Dataset}
		}
		src, err := dataset.Expand(ds, dataset.Options{Target: o.Target, Judge: o.Judge, Repeats: o.Repeats, Attacks: o.Attacks, Prepare: prepare})
		if err != nil {
			return nil, usage(err)
		}
		return src, nil
	}
	cfg, err := loadConfigMax(o.Config, int64(o.MaxFileSize))
	if err != nil {
		return nil, err
	}
	o.inputs = []string{o.Config}
	o.apply(&cfg)
	if err := prepare(&cfg); err != nil {
		return nil, usage(err)
	}
	grid, err := matrix.Expand(cfg)
	if err != nil {
		return nil, usage(err)
	}
	return grid, nil
}

// newServer is the proxy for the flags: it answers requests for its own
// address, and for the --listen host when that names one.
func (o *proxyOptions) newServer() *proxy.Server {
	return &proxy.Server{BaseURL: o.BaseURL, Hosts: listenHosts(o.Listen)}
}

// listen starts the proxy's HTTP server; stop shuts it down. before, when
// set, is given the URL before the first request is served.
func (o *proxyOptions) listen(streams IO, h http.Handler, before func(url string)) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return "", nil, usage(fmt.Errorf("--listen %s: %w", o.Listen, err))
	}
	addr := ln.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		fmt.Fprintf(streams.ErrOut, "warning: the proxy listens on %s, beyond this machine: anyone who reaches it can send requests with your API key\n", addr)
	}
	host := addr.String()
	if addr.IP.IsUnspecified() {
		host = fmt.Sprintf("127.0.0.1:%d", addr.Port)
	}
	url = "http://" + host
	if before != nil {
		before(url)
	}
	return url, serveUntilStopped(proxy.NewHTTPServer(h), ln), nil
}

func newProxyRunCmd(streams IO) *cobra.Command {
	o := &proxyOptions{}
	cmd := &cobra.Command{
		Use:   "run --config FILE.toml [flags] -- AGENT COMMAND...",
		Short: "Run an agent command once per cell, its model traffic through the proxy",
		Long: `Plan the config's matrix (attacks × defenses × channels × repeats), start the
proxy, and run the agent command once per cell. Each run gets
OPENAI_BASE_URL and ANTHROPIC_BASE_URL pointing at its own session of the
proxy, PIKIT_SESSION naming it and PIKIT_PROXY_URL; {session},
{openai_base_url} and {anthropic_base_url} in the command's arguments are
replaced too. The cell ends when the command exits; its trace is judged
and written like any result. attacks = ["none"] runs the agent untainted:
its own benign behaviour, for utility under attack.

The agent gets OPENAI_API_KEY and ANTHROPIC_API_KEY set to the placeholder
pikit-proxy (the proxy sends your key upstream itself) and none of your
other secrets (API keys, tokens, cloud credentials); --pass-env NAME
passes one it needs. Which were withheld is said once, by name.

--max-requests caps the model requests the proxy forwards for the whole
run: one past it is not sent (the agent gets 429 saying why) and its cell
is recorded as stopped by the budget, for --resume to run again.`,
		Example: `  pikit proxy run --config exp.toml -o results.jsonl -- python3 my_agent.py
  pikit proxy run --config exp.toml --pass-env LANGSMITH_API_KEY -o results.jsonl -- python3 my_agent.py
  pikit proxy run --config exp.toml --target openai:gpt-4o-mini -j 4 -o results.jsonl -- node agent.js
  pikit proxy run --config exp.toml --upstream http://127.0.0.1:8000/v1 -- ./agent --base-url {openai_base_url}`,
		Args: agentCommand("pikit proxy run --config exp.toml -- python3 my_agent.py"),
		RunE: func(cmd *cobra.Command, a []string) error {
			src, err := o.load(cmd)
			if err != nil {
				return err
			}
			if o.AgentTimeout <= 0 {
				return usage(fmt.Errorf("--agent-timeout: want a positive duration, got %s", o.AgentTimeout))
			}
			for _, name := range o.PassEnv {
				if err := proxy.CheckPassEnv(name); err != nil {
					return usage(fmt.Errorf("--pass-env %s: %w", name, err))
				}
			}
			if o.DryRun {
				return o.execute(cmd.Context(), streams, src, nil)
			}
			if err := checkListen(o.Listen); err != nil {
				return err
			}
			return o.runStarted(cmd.Context(), streams, src, func() (matrix.Driver, func(), error) {
				srv := o.newServer()
				url, stop, err := o.listen(streams, srv, nil)
				if err != nil {
					return nil, nil, err
				}
				fmt.Fprintf(streams.ErrOut, "proxy: %s\n", url)
				d := &proxy.Driver{Server: srv, URL: url, Command: a, Timeout: o.AgentTimeout, PassEnv: o.PassEnv}
				writeWithheld(streams, d.Withheld())
				return d, stop, nil
			})
		},
	}
	o.addProxyFlags(cmd)
	cmd.Flags().DurationVar(&o.AgentTimeout, "agent-timeout", proxy.DefaultAgentTimeout, "bound on each run of the agent command; it is killed (with its children) after")
	cmd.Flags().StringArrayVar(&o.PassEnv, "pass-env", nil, "pass the variable `NAME` of your environment to the agent although it looks like a secret (repeatable); the agent gets OPENAI_API_KEY and ANTHROPIC_API_KEY as the placeholder "+proxy.PlaceholderKey+" always")
	return cmd
}

// writeWithheld says, once per run, which variables the agent command
// does not get: names, never values.
func writeWithheld(streams IO, names []string) {
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(streams.ErrOut, "agent environment: withheld %s (the provider keys become the placeholder %s: the proxy sends your key upstream itself); pass a variable with --pass-env NAME\n",
		strings.Join(names, ", "), proxy.PlaceholderKey)
}

func newProxyServeCmd(streams IO) *cobra.Command {
	o := &proxyOptions{}
	cmd := &cobra.Command{
		Use:   "serve --config FILE.toml [flags]",
		Short: "Run the proxy alone; agents open sessions, each session is a cell",
		Long: `Run the proxy for agents pikit cannot launch. Each new session (the id in
the base URL, http://HOST/s/{id}/v1, or the X-Pikit-Session header) takes
the next cell of the plan; POST /pikit/sessions opens one and answers its
id, cell and base URLs. A session ends on POST /pikit/sessions/{id}/end or
after --idle-timeout without a request; its result is written then. The
proxy stops when every cell has run. -j sets how many sessions may be open
at once.`,
		Example: `  pikit proxy serve --config exp.toml --listen 127.0.0.1:8787 -o results.jsonl
  # then, for each run of the agent:
  OPENAI_BASE_URL=http://127.0.0.1:8787/s/run-1/v1 python3 my_agent.py
  curl -X POST http://127.0.0.1:8787/pikit/sessions/run-1/end`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := o.load(cmd)
			if err != nil {
				return err
			}
			if o.IdleTimeout <= 0 {
				return usage(fmt.Errorf("--idle-timeout: want a positive duration, got %s", o.IdleTimeout))
			}
			if o.DryRun {
				return o.execute(cmd.Context(), streams, src, nil)
			}
			if err := checkListen(o.Listen); err != nil {
				return err
			}
			sv := &proxy.Serve{Server: o.newServer(), IdleTimeout: o.IdleTimeout}
			defer sv.Finish()
			return o.runStarted(cmd.Context(), streams, src, func() (matrix.Driver, func(), error) {
				url, stop, err := o.listen(streams, sv, func(url string) { sv.URL = url })
				if err != nil {
					return nil, nil, err
				}
				fmt.Fprintf(streams.ErrOut, "proxy: %s serving %d cells\n  agents: OPENAI_BASE_URL=%s/s/{session}/v1 or ANTHROPIC_BASE_URL=%s/s/{session}\n  end a session: POST %s/pikit/sessions/{session}/end\n", url, src.Len(), url, url, url)
				return sv, stop, nil
			})
		},
	}
	o.addProxyFlags(cmd)
	cmd.Flags().DurationVar(&o.IdleTimeout, "idle-timeout", proxy.DefaultIdleTimeout, "end a session after this long without a request")
	return cmd
}
