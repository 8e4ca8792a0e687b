package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/matrix"
	"github.com/spf13/cobra"
)

// What the commands that serve agents (pikit proxy, pikit web) share:
// their --listen address, a server started only when the first cell
// runs, and stopped when the run ends.

// listenHosts is the host a --listen address names, for a local server's
// Host and Origin checks: none for an IP that is every address's.
func listenHosts(listen string) []string {
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			return []string{host}
		}
	}
	return nil
}

// checkListen tries a --listen address (and lets go of it at once), so
// that one that cannot be had is a usage error before anything runs.
func checkListen(listen string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return usage(fmt.Errorf("--listen %s: %w", listen, err))
	}
	return ln.Close()
}

// serveUntilStopped serves hs on ln and returns what shuts it down
// (waiting up to 5 seconds for requests in flight).
func serveUntilStopped(hs *http.Server, ln net.Listener) (stop func()) {
	go hs.Serve(ln)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}
}

// startFirst is a matrix.Driver that starts its server when the runner
// hands it its first cell: by then every check of the run (the config,
// the trust check, preflight, --output, a --max-cells confirmation) has
// passed, so the URL it prints is one that serves. A run that stops
// before its first cell never listens.
type startFirst struct {
	start  func() (matrix.Driver, func(), error)
	cancel context.CancelFunc // stops the run when the server cannot start

	once sync.Once
	d    matrix.Driver
	stop func() // shuts the server down, once started
	err  error
}

// Drive implements matrix.Driver.
func (s *startFirst) Drive(ctx context.Context, dr matrix.Drive) (agent.Trace, error) {
	s.once.Do(func() {
		if s.d, s.stop, s.err = s.start(); s.err != nil {
			s.cancel()
		}
	})
	if s.err != nil {
		return agent.Trace{}, s.err
	}
	return s.d.Drive(ctx, dr)
}

// runStarted executes the plan with the driver start returns, started at
// the first cell (see startFirst), and stops what start started when the
// run ends; a server that could not start is the command's error.
func (o *runOptions) runStarted(ctx context.Context, streams IO, src matrix.Source, start func() (d matrix.Driver, stop func(), err error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sf := &startFirst{start: start, cancel: cancel}
	defer func() {
		if sf.stop != nil {
			sf.stop()
		}
	}()
	o.driver = sf
	err := o.execute(ctx, streams, src, []string{"attack", "defense", "channel"})
	if sf.err != nil {
		return sf.err
	}
	return err
}

// agentCommand is the Args of a command that runs an agent command given
// after --; example is a whole command line that does.
func agentCommand(example string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if cmd.ArgsLenAtDash() != 0 || len(a) == 0 {
			return usage(errors.New("give the agent's command after --, e.g. " + example))
		}
		return nil
	}
}
