package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/net/netutil"

	"github.com/pikit-go/pikit/defense"
	"github.com/pikit-go/pikit/internal/agentenv"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/proxy"
	"github.com/pikit-go/pikit/web"
)

// webSkip are the run flags that would do nothing for a browser agent:
// the agent talks to its own model, which pikit neither opens nor counts
// (but for pikit web run --proxy, where --max-requests and --max-tokens
// bound what passes through the proxy).
var webSkip = []string{"temperature", "cache", "max-retries", "request-timeout", "rps", "max-response-bytes", "base-url", "target"}

// webServeSkip are webSkip and the budgets, which pikit web serve has no
// model traffic to apply to.
var webServeSkip = append(slices.Clone(webSkip), "max-requests", "max-tokens")

type webOptions struct {
	runOptions
	Config       string
	Listen       string
	AgentTimeout time.Duration
	PassEnv      []string
	HAR          string
	Proxy        bool

	// har is the --har directory, opened by prepare for the run.
	har *web.HARFiles
}

func newWebCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Test a browser agent: serve it poisoned web pages and record what it does there",
		Long: `pikit web serves each cell a small web site (a shop, a forum, a docs site, a
webmail inbox, a search engine's results, a travel site: pikit list sites)
under its own session path, with the cell's payload placed in one of its
pages by the cell's channel: a web placement (web_visible, web_hidden,
web_attribute, web_image, …: pikit list channels) or any text channel.

Its sinks are HTTP endpoints on the same server: the site's forms (a
checkout, a login, a reply, a send button), any request under the
attacker's host ({attacker_url} in a payload), downloads. A sink request
is recorded and answered; nothing is forwarded or sent anywhere. The
trace lists every page the agent fetched, in order, with what was on it
and whether the payload was, and every sink request with its fields,
which the judge checks against sink_args.

It listens on 127.0.0.1 and answers only requests for its own address
from this machine.`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(newWebRunCmd(streams), newWebServeCmd(streams))
	return cmd
}

// load reads the config and plans it for a browser agent.
func (o *webOptions) load(cmd *cobra.Command) (matrix.Source, error) {
	if o.Config == "" {
		return nil, usage(errors.New("give --config FILE.toml (its [web] section chooses the site and page)"))
	}
	if err := o.complete(cmd); err != nil {
		return nil, err
	}
	cfg, err := loadConfigMax(o.Config, int64(o.MaxFileSize))
	if err != nil {
		return nil, err
	}
	o.inputs = []string{o.Config}
	o.apply(&cfg)
	cfg.Driven = "web"
	if _, err := web.ParseSetup(&cfg); err != nil {
		return nil, usage(err)
	}
	if err := webDefenses(&cfg); err != nil {
		return nil, usage(err)
	}
	if o.Proxy {
		// The config's target answers the agent's model requests: its key
		// and upstream are checked before anything runs.
		if err := (&proxy.Server{}).Check(&cfg); err != nil {
			return nil, usage(fmt.Errorf("%s: --proxy: %w", cfg.Source, err))
		}
	}
	grid, err := matrix.Expand(cfg)
	if err != nil {
		return nil, usage(err)
	}
	return grid, nil
}

func newWebRunCmd(streams IO) *cobra.Command {
	o := &webOptions{}
	cmd := &cobra.Command{
		Use:   "run --config FILE.toml [flags] -- AGENT COMMAND...",
		Short: "Run a browser agent once per cell against its session's site",
		Long: `Plan the config's matrix (attacks × defenses × channels × repeats), start the
site server, and run the agent command once per cell. Each run gets
PIKIT_WEB_URL (its session's start page), PIKIT_SESSION and PIKIT_WEB_TASK
(what the user asks: the config's user_message, or the site's own task);
{web_url}, {session} and {task} in the command's arguments are replaced
too. The command's standard output is the agent's answer; the cell ends
when it exits, and its trace is judged and written like any result.

[web] in the config chooses site = NAME (pikit list sites), start = PATH
and page = PATH (the page the payload goes in). In a payload,
{attacker_url} is the attacker's site on this server and {web_url} the
session's start page.

The agent gets none of your secrets (API keys, tokens, cloud
credentials) unless --pass-env NAME passes one; a browser agent usually
needs its model's key.`,
		Example: `  pikit web run --config web.toml -o results.jsonl -- python3 browser_agent.py
  pikit web run --config web.toml --pass-env OPENAI_API_KEY -- node agent.js --url {web_url} --task {task}`,
		Args: agentCommand("pikit web run --config web.toml -- python3 browser_agent.py"),
		RunE: func(cmd *cobra.Command, a []string) error {
			src, err := o.load(cmd)
			if err != nil {
				return err
			}
			if o.AgentTimeout <= 0 {
				return usage(fmt.Errorf("--agent-timeout: want a positive duration, got %s", o.AgentTimeout))
			}
			if (o.MaxRequests > 0 || o.MaxTokens > 0) && !o.Proxy {
				return usage(errors.New("--max-requests and --max-tokens bound the model traffic of pikit web run --proxy; without --proxy the agent's model traffic does not pass through pikit"))
			}
			for _, name := range o.PassEnv {
				if err := checkWebPassEnv(name); err != nil {
					return usage(fmt.Errorf("--pass-env %s: %w", name, err))
				}
			}
			if o.DryRun {
				return o.execute(cmd.Context(), streams, src, nil)
			}
			if err := o.prepare(); err != nil {
				return err
			}
			defer o.har.Close()
			return o.runStarted(cmd.Context(), streams, src, func() (matrix.Driver, func(), error) {
				srv := o.newServer()
				stop, err := o.listen(srv, srv)
				if err != nil {
					return nil, nil, err
				}
				fmt.Fprintf(streams.ErrOut, "web: %s\n", srv.URL)
				d := &web.Driver{Server: srv, Command: a, Timeout: o.AgentTimeout, PassEnv: o.PassEnv, HAR: o.har}
				if o.Proxy {
					ln, err := net.Listen("tcp", "127.0.0.1:0")
					if err != nil {
						stop()
						return nil, nil, fmt.Errorf("--proxy: %w", err)
					}
					d.Model, d.ModelURL = &proxy.Server{}, "http://"+ln.Addr().String()
					webStop, proxyStop := stop, serveUntilStopped(proxy.NewHTTPServer(d.Model), ln)
					stop = func() { webStop(); proxyStop() }
					fmt.Fprintf(streams.ErrOut, "proxy: %s (the agent's model traffic, answered by the config's target)\n", d.ModelURL)
				}
				if w := d.Withheld(); len(w) > 0 {
					fmt.Fprintf(streams.ErrOut, "agent environment: withheld %s; pass a variable with --pass-env NAME\n", strings.Join(w, ", "))
				}
				return d, stop, nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Config, "config", "c", "", "experiment config `FILE` (TOML); its [web] section chooses the site and page")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "address the site server listens on (port 0: any free port)")
	f.BoolVar(&o.Proxy, "proxy", false, "also pass the agent's model traffic through pikit proxy (OPENAI_BASE_URL, ANTHROPIC_BASE_URL and placeholder keys set), answered by the config's target: one result holds the model's steps and the web's")
	f.DurationVar(&o.AgentTimeout, "agent-timeout", web.DefaultAgentTimeout, "bound on each run of the agent command; it is killed (with its children) after")
	f.StringVar(&o.HAR, "har", "", "write each cell's HTTP exchanges to `DIR`/KEY.har (HAR 1.2, the cell's key; each file created new, --resume replacing its own; credentials in request headers redacted)")
	f.StringArrayVar(&o.PassEnv, "pass-env", nil, "pass the variable `NAME` of your environment to the agent although it looks like a secret (repeatable)")
	o.addFlags(cmd, true, webSkip...)
	return cmd
}

// newServer is the site server for the flags: it answers requests for
// its own address, and for the --listen host when that names one.
func (o *webOptions) newServer() *web.Server {
	return &web.Server{Hosts: listenHosts(o.Listen)}
}

// prepare tries --listen and opens the --har directory (made when
// missing; a resumed run, or one started over with --force, may replace
// regular files there): what would stop the run is a usage error before
// anything runs.
func (o *webOptions) prepare() error {
	if err := checkListen(o.Listen); err != nil {
		return err
	}
	if o.HAR != "" {
		h, err := web.OpenHAR(o.HAR, o.Resume || o.Force)
		if err != nil {
			return usage(fmt.Errorf("--har %s: %w", o.HAR, err))
		}
		o.har = h
	}
	return nil
}

// listen serves h at --listen, srv.URL set to its address; stop shuts it
// down.
func (o *webOptions) listen(srv *web.Server, h http.Handler) (stop func(), err error) {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	host := addr.String()
	if addr.IP.IsUnspecified() {
		host = fmt.Sprintf("127.0.0.1:%d", addr.Port)
	}
	srv.URL = "http://" + host
	// A hostile agent cannot hold more connections than this open: the
	// next waits for one to close.
	return serveUntilStopped(web.NewHTTPServer(h), netutil.LimitListener(ln, web.MaxConns)), nil
}

// checkWebPassEnv says why a variable cannot be passed with --pass-env.
func checkWebPassEnv(name string) error {
	for _, own := range []string{web.EnvURL, web.EnvSession, web.EnvTask} {
		if name == own {
			return fmt.Errorf("pikit web sets %s for each run of the agent itself", name)
		}
	}
	if !agentenv.ValidName(name) {
		return fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", name)
	}
	return nil
}

// webDefenses refuses a prompt defense in a pikit web config: it would
// harden a prompt, and the browser agent writes its own. Detectors apply:
// they screen each page before the agent is served it.
func webDefenses(cfg *matrix.Config) error {
	names := slices.Clone(cfg.Defenses)
	for _, sp := range cfg.DefenseSpecs {
		names = append(names, sp.Name)
	}
	detectors := defense.Detectors.Names()
	for _, n := range names {
		if n == matrix.DefaultDefense || slices.Contains(detectors, n) {
			continue
		}
		return fmt.Errorf("%s: defense %q hardens a prompt, and a browser agent writes its own: pikit web applies detectors only, screening each page before the agent is served it (%s)", cfg.Source, n, strings.Join(detectors, ", "))
	}
	return nil
}

func newWebServeCmd(streams IO) *cobra.Command {
	o := &webOptions{}
	var idle time.Duration
	cmd := &cobra.Command{
		Use:   "serve --config FILE.toml [flags]",
		Short: "Serve the sites alone; agents open sessions, each session is a cell",
		Long: `Serve the cells' sites for browser agents pikit does not launch. The first
request under a new session id (http://HOST/s/{id}/...) takes the next cell
of the plan; POST /pikit/sessions opens one and answers its id, cell, start
URL and task. A session ends on POST /pikit/sessions/{id}/end, whose body is
the agent's answer, or after --idle-timeout without a request; its result is
written then. The server stops when every cell has run. -j sets how many
sessions may be open at once.`,
		Example: `  pikit web serve --config web.toml --listen 127.0.0.1:8788 -o results.jsonl
  # then, for each run of the agent:
  curl -s -X POST http://127.0.0.1:8788/pikit/sessions     # {"id": ..., "start_url": ..., "task": ...}
  my-browser-agent --url START_URL --task TASK
  curl -s -X POST --data-binary @answer.txt http://127.0.0.1:8788/pikit/sessions/ID/end`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := o.load(cmd)
			if err != nil {
				return err
			}
			if idle <= 0 {
				return usage(fmt.Errorf("--idle-timeout: want a positive duration, got %s", idle))
			}
			if o.DryRun {
				return o.execute(cmd.Context(), streams, src, nil)
			}
			if err := o.prepare(); err != nil {
				return err
			}
			defer o.har.Close()
			sv := &web.Serve{Server: o.newServer(), IdleTimeout: idle, HAR: o.har}
			defer sv.Finish()
			return o.runStarted(cmd.Context(), streams, src, func() (matrix.Driver, func(), error) {
				stop, err := o.listen(sv.Server, sv)
				if err != nil {
					return nil, nil, err
				}
				url := sv.Server.URL
				fmt.Fprintf(streams.ErrOut, "web: %s serving %d cells\n  agents: open %s/s/{session}/ (a new session id takes the next cell), or POST %s/pikit/sessions\n  end a session: POST %s/pikit/sessions/{session}/end (the body: the agent's answer)\n", url, src.Len(), url, url, url)
				return sv, stop, nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Config, "config", "c", "", "experiment config `FILE` (TOML); its [web] section chooses the site and page")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "address the site server listens on (port 0: any free port)")
	f.DurationVar(&idle, "idle-timeout", web.DefaultIdleTimeout, "end a session after this long without a request")
	f.StringVar(&o.HAR, "har", "", "write each cell's HTTP exchanges to `DIR`/KEY.har (HAR 1.2, the cell's key; each file created new, --resume replacing its own; credentials in request headers redacted)")
	o.addFlags(cmd, true, webServeSkip...)
	return cmd
}
