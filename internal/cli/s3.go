package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/objstore"
	"github.com/pikit-go/pikit/report"
)

// s3Options are the flags of the commands that write or read results in
// object storage (s3://BUCKET/PREFIX/).
type s3Options struct {
	Endpoint string
	Flush    time.Duration
}

func (s *s3Options) addEndpointFlag(f *pflag.FlagSet) {
	f.StringVar(&s.Endpoint, "s3-endpoint", "", "the `URL` of an S3-compatible store (MinIO, Ceph, R2, …) for s3:// locations, addressed path-style (default: AWS_ENDPOINT_URL_S3, else AWS); credentials come from the AWS standard chain")
}

func (s *s3Options) addWriteFlags(f *pflag.FlagSet) {
	s.addEndpointFlag(f)
	f.DurationVar(&s.Flush, "s3-flush", objstore.DefaultFlushEvery, "with an s3:// --output, upload finished results at least this often: what a killed process can lose")
}

// check refuses the flags without an s3:// location to apply to.
func (s *s3Options) check(used bool, flagSet *pflag.FlagSet) error {
	if !used {
		for _, name := range []string{"s3-endpoint", "s3-flush"} {
			if fl := flagSet.Lookup(name); fl != nil && fl.Changed {
				return usage(fmt.Errorf("--%s applies to s3:// locations, and none is given", name))
			}
		}
		return nil
	}
	if s.Endpoint != "" {
		if err := objstore.CheckEndpoint(s.Endpoint); err != nil {
			return usage(fmt.Errorf("--s3-endpoint: %w", err))
		}
	}
	if fl := flagSet.Lookup("s3-flush"); fl != nil && (s.Flush < 10*time.Millisecond || s.Flush > time.Hour) {
		return usage(fmt.Errorf("--s3-flush: want a duration from 10ms to 1h, got %v", s.Flush))
	}
	return nil
}

func (s *s3Options) open(ctx context.Context) (*objstore.Store, error) {
	return objstore.Open(ctx, objstore.Options{Endpoint: s.Endpoint})
}

// awsRouting are the AWS variables that choose where the SDK sends
// requests or reads credentials from: a .env file from someone else must
// not set them for the user's own credentials.
var awsRouting = []string{
	"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_PROFILE",
	"AWS_CA_BUNDLE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
	"AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
}

// s3Refusal refuses an s3:// location whose endpoint or credential source
// a .env file chose, as a base URL is refused (see checkDotEnv): a .env
// may move the endpoint only together with its own keys, and may not
// point the credential chain anywhere. --trust-config allows both; so
// does --s3-endpoint, which the user chose.
func (s *s3Options) s3Refusal(env dotEnv, trust bool) error {
	if trust {
		return nil
	}
	ownKeys := slices.Contains(env.aws, "AWS_ACCESS_KEY_ID") && slices.Contains(env.aws, "AWS_SECRET_ACCESS_KEY")
	for _, name := range env.aws {
		if !slices.Contains(awsRouting, name) {
			continue
		}
		if strings.HasPrefix(name, "AWS_ENDPOINT_URL") && (ownKeys || s.Endpoint != "") {
			continue
		}
		return usage(fmt.Errorf("%s sets %s, and the run would send your AWS credentials and every result where it says; "+
			"a .env file may move the S3 endpoint only together with its own AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and may not choose where credentials come from: "+
			"pass --s3-endpoint, set %s in your environment, or add --trust-config", env.path, name, name))
	}
	return nil
}

// inspect lists the run stored under an s3:// prefix. An unfinished shard
// (missing, in flight, killed) is an error with finished, else a warning:
// its results so far are read.
func (s *s3Options) inspect(ctx context.Context, errOut io.Writer, arg string, finished bool) (*objstore.Store, *objstore.Prefix, error) {
	u, err := objstore.ParseURL(arg)
	if err != nil {
		return nil, nil, usage(err)
	}
	st, err := s.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	p, err := st.Inspect(ctx, u)
	if errors.Is(err, objstore.ErrOtherRun) {
		return nil, nil, usage(err)
	}
	if err != nil {
		return nil, nil, err
	}
	if p.N == 0 {
		return nil, nil, usage(fmt.Errorf("%s: no pikit results there (no shard-K-of-N objects)", u))
	}
	if left := p.Unfinished(); len(left) > 0 {
		msg := fmt.Sprintf("%s: %s of %d %s not finished", u, shardList(left), p.N, plural(len(left), "has", "have"))
		if finished {
			return nil, nil, unfinishedError{msg + " (missing, still running, or stopped short: run them again with --resume)"}
		}
		fmt.Fprintf(errOut, "warning: %s; reading the results they stored so far\n", termsafe.Line(msg))
	}
	return st, p, nil
}

// openPrefix opens the results stored under an s3:// prefix, each cell
// once (see inspect).
func (s *s3Options) openPrefix(ctx context.Context, errOut io.Writer, arg string, finished bool) (io.ReadCloser, error) {
	st, p, err := s.inspect(ctx, errOut, arg, finished)
	if err != nil {
		return nil, err
	}
	return st.Open(ctx, p), nil
}

// unfinishedError is a prefix whose run has not ended: a gate over it
// fails (exit 1), as it checks cells that are not all there.
type unfinishedError struct{ msg string }

func (e unfinishedError) Error() string { return e.msg }

// shardList names shards compactly: "shards 2, 5-7".
func shardList(sh []objstore.Shard) string {
	var parts []string
	for i := 0; i < len(sh); {
		j := i
		for j+1 < len(sh) && sh[j+1].K == sh[j].K+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", sh[i].K, sh[j].K))
		} else {
			parts = append(parts, strconv.Itoa(sh[i].K))
		}
		i = j + 1
	}
	if len(sh) == 1 {
		return "shard " + parts[0]
	}
	return "shards " + strings.Join(parts, ", ")
}

// s3Writer writes a run's results to its shard under an s3:// prefix.
type s3Writer struct {
	report.Writer
	out *objstore.Output
}

func (w *s3Writer) Encoder() (report.Encoder, bool) {
	e, ok := w.Writer.(report.Encoder)
	return e, ok
}

// Close uploads what is buffered: a run that stopped short.
func (w *s3Writer) Close() error {
	err := w.Writer.Close()
	if cerr := w.out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Finish ends a shard whose run ended: one object and its summary.
func (w *s3Writer) Finish(ctx context.Context) (*objstore.ShardSummary, error) {
	if err := w.Writer.Close(); err != nil {
		w.out.Close()
		return nil, err
	}
	return w.out.Finish(ctx)
}

// openS3Output opens the run's shard under the s3:// --output: the keys
// it already holds (with --resume), and a writer.
func (o *runOptions) openS3Output(ctx context.Context) (w *s3Writer, done map[string]bool, dropped int, err error) {
	st, err := o.s3.open(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	out, done, dropped, err := st.OpenShard(ctx, *o.s3At, o.shardOf(), objstore.OutputOptions{Resume: o.Resume, Force: o.Force, FlushEvery: o.s3.Flush})
	if errors.Is(err, objstore.ErrExists) || errors.Is(err, objstore.ErrOtherRun) {
		return nil, nil, 0, usage(err)
	}
	if err != nil {
		return nil, nil, 0, err
	}
	return &s3Writer{Writer: report.NewJSONL(out), out: out}, done, dropped, nil
}

// shardOf names the run's shard for messages.
func (o *runOptions) shardOf() objstore.Shard {
	return objstore.Shard{K: max(o.shardK, 1), N: max(o.shardN, 1)}
}

// finishS3 ends the shard of a run that ended and says what it stored.
func (o *runOptions) finishS3(ctx context.Context, streams IO, w *s3Writer) error {
	sum, err := w.Finish(ctx)
	if err != nil {
		return writeError{o.Output, err}
	}
	fmt.Fprintf(streams.ErrOut, "%s: %d results (%d runtime errors) in %s%s.jsonl\n", o.shardOf(), sum.Results, sum.Errors, o.s3At, o.shardOf().Name())
	return nil
}

// resultsReader reads the results a command is given: files, "-" (in),
// and s3:// prefixes; finished refuses a prefix whose run has not ended
// (see openPrefix).
type resultsReader struct {
	ctx      context.Context
	streams  IO
	s3       *s3Options
	finished bool
}

// scanPrefix reads the results under an s3:// prefix.
func (r resultsReader) scanPrefix(arg string, fn func(*report.Record) error) error {
	rc, err := r.s3.openPrefix(r.ctx, r.streams.ErrOut, arg, r.finished)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := report.Scan(rc, arg, ".jsonl", fn); err != nil {
		if errors.Is(err, report.ErrNotResults) {
			return usage(err)
		}
		return err
	}
	return nil
}

// writeS3 says, for --dry-run, where an s3:// --output would go.
func (o *runOptions) writeS3(w io.Writer) {
	where, from := objstore.ResolveEndpoint(o.s3.Endpoint)
	if where == "" {
		where = "AWS S3"
	} else {
		from = " (" + from + ")"
	}
	fmt.Fprintf(w, "results:\n  %s%s.jsonl at %s%s, in parts every %v while it runs\n", o.s3At, o.shardOf().Name(), termsafe.Line(objstore.RedactURL(where)), from, o.s3.Flush)
}
