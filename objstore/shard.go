package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/report"
)

// OutputOptions say how a shard's output opens.
type OutputOptions struct {
	// Resume keeps what the shard stored and reports its cells done;
	// without it a shard that stored anything is refused, unless Force
	// deletes it first.
	Resume, Force bool
	// FlushEvery is how long a finished line waits, at most, before it
	// is uploaded (0: DefaultFlushEvery).
	FlushEvery time.Duration
}

// Output is a shard's results being written: an io.Writer of JSONL lines,
// uploaded in parts; Finish makes them the shard's one results object.
type Output struct {
	st    *Store
	u     URL
	sh    Shard
	pw    *partWriter
	fresh bool // the shard held nothing: every line written is a key of its own
}

// ErrExists is returned for a shard that stored results, opened without
// Resume or Force.
var ErrExists = errors.New("results exist")

// ErrOtherRun is returned for a prefix that holds the shards of a run
// split another way.
var ErrOtherRun = errors.New("another run's shards")

// OpenShard opens shard sh of u for writing. With Resume, done holds the
// keys that have a result other than a runtime error (those are run
// again), and dropped counts the lines that will be superseded.
func (s *Store) OpenShard(ctx context.Context, u URL, sh Shard, o OutputOptions) (out *Output, done map[string]bool, dropped int, err error) {
	p, err := s.Inspect(ctx, u)
	if err != nil {
		return nil, nil, 0, err
	}
	if p.N != 0 && p.N != sh.N {
		return nil, nil, 0, fmt.Errorf("%s holds the shards of a run in %d; this is %s: %w; keep one run per prefix", u, p.N, sh, ErrOtherRun)
	}
	st := p.Shard(sh)
	done = map[string]bool{}
	switch {
	case st.Empty():
	case o.Resume:
		seen := 0
		for _, src := range s.sources(ctx, u, st) {
			if err := scanObject(src, func(li report.LineInfo) error {
				seen++
				if li.Outcome != judge.RuntimeError {
					done[li.Key] = true
				}
				return nil
			}); err != nil {
				return nil, nil, 0, err
			}
		}
		dropped = seen - len(done)
	case o.Force:
		if err := s.Delete(ctx, u, st.keys(u)); err != nil {
			return nil, nil, 0, err
		}
		st = &ShardState{Shard: sh}
	default:
		return nil, nil, 0, fmt.Errorf("%s: %s stored results (%s): %w; --resume continues it, --force starts it over", u, sh, st.describe(), ErrExists)
	}
	id := make([]byte, 4)
	rand.Read(id)
	out = &Output{st: s, u: u, sh: sh, fresh: st.Empty()}
	out.pw = newPartWriter(ctx, s, u, sh, hex.EncodeToString(id), max(st.lastSeq(), st.Through, st.SummaryThru), o.FlushEvery)
	return out, done, dropped, nil
}

// scanObject reads one object's lines; a half-written last line (which
// an upload never leaves) is passed over.
func scanObject(src report.Source, fn func(report.LineInfo) error) error {
	rc, err := src.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := report.ScanKeys(rc, fn); err != nil {
		return fmt.Errorf("%s: %w", src.Name, err)
	}
	return nil
}

func (st *ShardState) describe() string {
	s := ""
	if st.Results {
		s = "a results object"
	}
	if n := len(st.pending()); n > 0 {
		if s != "" {
			s += " and "
		}
		s += strconv.Itoa(n) + " parts"
	}
	if s == "" {
		s = "a summary"
	}
	return s
}

// keys lists every object of the shard.
func (st *ShardState) keys(u URL) []string {
	var out []string
	if st.Results {
		out = append(out, st.resultsKey(u))
	}
	if st.Summary {
		out = append(out, st.summaryKey(u))
	}
	for _, p := range st.Parts {
		out = append(out, p.Key)
	}
	return out
}

// sources lists the objects that hold the shard's results, in order: its
// results object, then the parts written after it.
func (s *Store) sources(ctx context.Context, u URL, st *ShardState) []report.Source {
	var objs []object
	if st.Results {
		objs = append(objs, object{st.resultsKey(u), st.ResultsSize})
	}
	for _, p := range st.pending() {
		objs = append(objs, object{p.Key, p.Size})
	}
	return s.readAhead(ctx, u, objs)
}

// Write buffers JSONL lines for upload.
func (o *Output) Write(p []byte) (int, error) { return o.pw.Write(p) }

// parts returns how many parts this output has uploaded so far.
func (o *Output) parts() int {
	o.pw.mu.Lock()
	defer o.pw.mu.Unlock()
	return o.pw.written
}

// Close uploads what is buffered as a last part: a run that stopped
// short (a signal, a budget) ends here, and --resume goes on from it.
func (o *Output) Close() error {
	_, err := o.pw.Close()
	return err
}

// ShardSummary is the object written beside a finished shard's results.
type ShardSummary struct {
	Schema  string         `json:"schema"`
	Shard   int            `json:"shard"`
	Shards  int            `json:"shards"`
	Results int            `json:"results"`
	Errors  int            `json:"runtime_errors"`
	Through int            `json:"through_part"`
	Ended   string         `json:"ended"`
	Summary report.Summary `json:"summary"`
}

// SummarySchema names the summary object's format.
const SummarySchema = "pikit.shard-summary.v1"

// Finish ends a shard whose run ended: its parts are uploaded, then
// rewritten with the results object into one object (each cell key once,
// see report.Dedup) with its summary beside it, and the parts removed.
func (o *Output) Finish(ctx context.Context) (*ShardSummary, error) {
	last, err := o.pw.Close()
	if err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx) // a signal now must not leave half a shard
	p, err := o.st.Inspect(ctx, o.u)
	if err != nil {
		return nil, err
	}
	st := p.Shard(o.sh)
	through := max(last, st.lastSeq(), st.Through)
	agg := report.NewAggregator()
	sum := &ShardSummary{Schema: SummarySchema, Shard: o.sh.K, Shards: o.sh.N, Through: through}
	meta := map[string]string{metaThrough: strconv.Itoa(through)}
	if len(st.pending()) == 0 && st.Results {
		// Nothing new since the last rewrite: count what is there.
		err = o.summarize(ctx, st, agg)
	} else {
		err = o.rewrite(ctx, st, meta, agg)
	}
	if err != nil {
		return nil, err
	}
	sum.Summary = agg.Summary()
	sum.Results, sum.Errors = sum.Summary.Cells, sum.Summary.Errors
	sum.Ended = time.Now().UTC().Format(time.RFC3339)
	body, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := o.st.Put(ctx, o.u, o.sh.summaryKey(o.u), append(body, '\n'), meta); err != nil {
		return nil, err
	}
	var old []string
	for _, pt := range st.Parts {
		if pt.Seq <= through {
			old = append(old, pt.Key)
		}
	}
	if err := o.st.Delete(ctx, o.u, old); err != nil {
		return sum, fmt.Errorf("%s is finished, but its parts are left: %w", o.sh, err)
	}
	return sum, nil
}

// rewrite writes the shard's results object anew from its sources,
// counting each result kept into agg.
func (o *Output) rewrite(ctx context.Context, st *ShardState, meta map[string]string, agg *report.Aggregator) error {
	srcs := o.st.sources(ctx, o.u, st)
	up, upw := io.Pipe()
	scan, scanw := io.Pipe()
	go func() {
		var err error
		if o.fresh {
			// One run wrote every part, each cell once: they are
			// joined as they are, in one pass.
			err = concat(srcs, io.MultiWriter(upw, scanw))
		} else {
			_, err = report.Dedup(srcs, io.MultiWriter(upw, scanw))
		}
		upw.CloseWithError(err)
		scanw.CloseWithError(err)
	}()
	scanned := make(chan error, 1)
	go func() {
		err := report.Scan(scan, o.u.Of(o.sh.resultsKey(o.u)), ".jsonl", func(r *report.Record) error { agg.AddRecord(r); return nil })
		scan.CloseWithError(err)
		scanned <- err
	}()
	err := o.st.Upload(ctx, o.u, o.sh.resultsKey(o.u), up, meta)
	up.CloseWithError(err)
	if serr := <-scanned; err == nil {
		err = serr
	}
	return err
}

// summarize counts the results object into agg.
func (o *Output) summarize(ctx context.Context, st *ShardState, agg *report.Aggregator) error {
	key := o.sh.resultsKey(o.u)
	rc, _, err := o.st.Get(ctx, o.u, key, st.ResultsSize)
	if err != nil {
		return err
	}
	defer rc.Close()
	return report.Scan(rc, o.u.Of(key), ".jsonl", func(r *report.Record) error { agg.AddRecord(r); return nil })
}

// Results writes the results a prefix holds to w as JSONL, shard by
// shard, each cell key once: a finished shard's object as it is, an
// unfinished one's results object and parts through report.Dedup.
func (s *Store) Results(ctx context.Context, p *Prefix, w io.Writer) error {
	for k := 1; k <= p.N; k++ {
		st := p.Shards[k]
		if st == nil {
			continue
		}
		srcs := s.sources(ctx, p.URL, st)
		var err error
		if len(st.pending()) == 0 && len(srcs) == 1 {
			err = concat(srcs, w)
		} else {
			_, err = report.Dedup(srcs, w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Open returns the prefix's results (see Results) as a stream.
func (s *Store) Open(ctx context.Context, p *Prefix) io.ReadCloser {
	r, w := io.Pipe()
	go func() { w.CloseWithError(s.Results(ctx, p, w)) }()
	return r
}

// concat copies the sources to w in order, each ending its last line.
func concat(srcs []report.Source, w io.Writer) error {
	for _, src := range srcs {
		rc, err := src.Open()
		if err != nil {
			return err
		}
		lw := &lastByte{w: w}
		_, err = io.Copy(lw, rc)
		rc.Close()
		if err == nil && lw.last != '\n' && lw.n > 0 {
			_, err = w.Write([]byte{'\n'}) // the next source starts a line of its own
		}
		if err != nil {
			return fmt.Errorf("%s: %w", src.Name, err)
		}
	}
	return nil
}

// lastByte passes writes on, keeping the last byte written.
type lastByte struct {
	w    io.Writer
	last byte
	n    int64
}

func (l *lastByte) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.last, l.n = p[n-1], l.n+int64(n)
	}
	return n, err
}
