package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/proxy"
)

// proxySkip are the run flags that would do nothing behind the proxy: the
// agent chooses its own sampling, retries and timeouts, and raw model
// traffic is not cached.
var proxySkip = []string{"temperature", "cache", "max-retries", "request-timeout", "rps"}

type proxyOptions struct {
	runOptions
	Config       string
	Dataset      string
	Listen       string
	Upstream     string
	AgentTimeout time.Duration
	IdleTimeout  time.Duration
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
API key (from the environment) only to the upstream you name, and never
writes it.`,
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
		ds, err := dataset.LoadAny(o.Dataset)
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
	cfg, err := loadConfig(o.Config)
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

// listen starts the proxy's HTTP server; stop shuts it down.
func (o *proxyOptions) listen(streams IO, h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return "", nil, usage(fmt.Errorf("--listen %s: %w", o.Listen, err))
	}
	addr := ln.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		fmt.Fprintf(streams.ErrOut, "warning: the proxy listens on %s, beyond this machine: anyone who reaches it can send requests with your API key\n", addr)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	go srv.Serve(ln)
	host := addr.String()
	if addr.IP.IsUnspecified() {
		host = fmt.Sprintf("127.0.0.1:%d", addr.Port)
	}
	return "http://" + host, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
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
its own benign behaviour, for utility under attack.`,
		Example: `  pikit proxy run --config exp.toml -o results.jsonl -- python3 my_agent.py
  pikit proxy run --config exp.toml --target openai:gpt-4o-mini -j 4 -o results.jsonl -- node agent.js
  pikit proxy run --config exp.toml --upstream http://127.0.0.1:8000/v1 -- ./agent --base-url {openai_base_url}`,
		Args: func(cmd *cobra.Command, a []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(a) == 0 {
				return usage(errors.New("give the agent's command after --, e.g. pikit proxy run --config exp.toml -- python3 my_agent.py"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			src, err := o.load(cmd)
			if err != nil {
				return err
			}
			if o.AgentTimeout <= 0 {
				return usage(fmt.Errorf("--agent-timeout: want a positive duration, got %s", o.AgentTimeout))
			}
			if o.DryRun {
				return o.execute(cmd.Context(), streams, src, nil)
			}
			srv := &proxy.Server{BaseURL: o.BaseURL}
			url, stop, err := o.listen(streams, srv)
			if err != nil {
				return err
			}
			defer stop()
			fmt.Fprintf(streams.ErrOut, "proxy: %s\n", url)
			o.driver = &proxy.Driver{Server: srv, URL: url, Command: a, Timeout: o.AgentTimeout}
			return o.execute(cmd.Context(), streams, src, []string{"attack", "defense", "channel"})
		},
	}
	o.addProxyFlags(cmd)
	cmd.Flags().DurationVar(&o.AgentTimeout, "agent-timeout", proxy.DefaultAgentTimeout, "bound on each run of the agent command; it is killed (with its children) after")
	return cmd
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
			srv := &proxy.Server{BaseURL: o.BaseURL}
			sv := &proxy.Serve{Server: srv, IdleTimeout: o.IdleTimeout}
			url, stop, err := o.listen(streams, sv)
			if err != nil {
				return err
			}
			defer stop()
			sv.URL = url
			fmt.Fprintf(streams.ErrOut, "proxy: %s serving %d cells\n  agents: OPENAI_BASE_URL=%s/s/{session}/v1 or ANTHROPIC_BASE_URL=%s/s/{session}\n  end a session: POST %s/pikit/sessions/{session}/end\n", url, src.Len(), url, url, url)
			o.driver = sv
			defer sv.Finish()
			return o.execute(cmd.Context(), streams, src, []string{"attack", "defense", "channel"})
		},
	}
	o.addProxyFlags(cmd)
	cmd.Flags().DurationVar(&o.IdleTimeout, "idle-timeout", proxy.DefaultIdleTimeout, "end a session after this long without a request")
	return cmd
}
