package objstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Shard is shard K (1-based) of N.
type Shard struct{ K, N int }

// Name is the shard's name under a prefix: shard-3-of-8.
func (sh Shard) Name() string { return fmt.Sprintf("shard-%d-of-%d", sh.K, sh.N) }

// String is how messages name it: shard 3 of 8.
func (sh Shard) String() string { return fmt.Sprintf("shard %d of %d", sh.K, sh.N) }

func (sh Shard) resultsKey(u URL) string { return u.Key(sh.Name() + ".jsonl") }
func (sh Shard) summaryKey(u URL) string { return u.Key(sh.Name() + ".summary.json") }
func (sh Shard) partsPrefix(u URL) string {
	return u.Key(sh.Name() + ".parts/")
}
func (sh Shard) partKey(u URL, seq int, writer string) string {
	return fmt.Sprintf("%s%06d-%s.jsonl", sh.partsPrefix(u), seq, writer)
}

// metaThrough is the user metadata, on a shard's results object and its
// summary, that says which parts the object holds: those numbered up to
// it.
const metaThrough = "pikit-through"

// maxShards bounds N in names read back from a listing.
const maxShards = 100_000

// Names under a prefix, as parseName reads them.
const (
	nameResults = iota + 1 // shard-K-of-N.jsonl
	nameSummary            // shard-K-of-N.summary.json
	namePart               // shard-K-of-N.parts/SEQ-ID.jsonl
)

// parseName reads a key relative to the prefix as one of a shard's
// objects (K and N of 1 to 6 digits, no leading zero; SEQ of 1 to 9
// digits; ID of 1 to 32 lowercase hex digits), or reports ok false (the
// other results are then meaningless).
// Plain string work, not regular expressions: this runs at every start
// of pikit that links it, and a regexp compiled at init would cost every
// command.
func parseName(rel string) (kind, k, n, seq int, ok bool) {
	rest, found := strings.CutPrefix(rel, "shard-")
	if !found {
		return
	}
	if k, rest, found = number(rest, 6, false); !found {
		return
	}
	if rest, found = strings.CutPrefix(rest, "-of-"); !found {
		return
	}
	if n, rest, found = number(rest, 6, false); !found {
		return
	}
	switch {
	case rest == ".jsonl":
		return nameResults, k, n, 0, true
	case rest == ".summary.json":
		return nameSummary, k, n, 0, true
	}
	if rest, found = strings.CutPrefix(rest, ".parts/"); !found {
		return
	}
	if seq, rest, found = number(rest, 9, true); !found {
		return
	}
	id, found := strings.CutSuffix(rest, ".jsonl")
	if !found || !strings.HasPrefix(id, "-") || len(id) < 2 || len(id) > 33 {
		return
	}
	for _, c := range id[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return
		}
	}
	return namePart, k, n, seq, true
}

// number reads 1 to max leading digits of s (a leading zero only when
// zero is allowed, as in a part's zero-padded number).
func number(s string, max int, zero bool) (int, string, bool) {
	i := 0
	for i < len(s) && i <= max && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > max || (!zero && s[0] == '0') {
		return 0, s, false
	}
	v, _ := strconv.Atoi(s[:i])
	return v, s[i:], true
}

// Part is one uploaded part of a shard's results.
type Part struct {
	Key  string
	Seq  int
	Size int64
}

// ShardState is what a listing shows of one shard.
type ShardState struct {
	Shard
	Results     bool // the shard's results object exists
	ResultsSize int64
	Through     int    // parts held in the results object (read by Inspect)
	Parts       []Part // every part listed, by number
	Summary     bool   // its summary exists
	SummaryThru int    // parts its summary's run held
}

// Finished reports whether the shard's run ended with every part in its
// results object and its summary written after them.
func (st *ShardState) Finished() bool {
	return st.Results && st.Summary && st.SummaryThru >= st.lastSeq() && st.Through >= st.lastSeq()
}

func (st *ShardState) lastSeq() int {
	if len(st.Parts) == 0 {
		return 0
	}
	return st.Parts[len(st.Parts)-1].Seq
}

// pending lists the parts not yet in the results object.
func (st *ShardState) pending() []Part {
	i, _ := slices.BinarySearchFunc(st.Parts, st.Through+1, func(p Part, seq int) int { return p.Seq - seq })
	return st.Parts[i:]
}

// Empty reports whether the shard has nothing stored.
func (st *ShardState) Empty() bool { return !st.Results && !st.Summary && len(st.Parts) == 0 }

// Prefix is what a prefix holds: the shards of one run (of N shards).
type Prefix struct {
	URL
	N      int
	Shards map[int]*ShardState // by K; only those with objects
	Other  int                 // objects under the prefix that are not a shard's
}

// Inspect lists the prefix and reads the metadata that says which parts
// each shard's results object holds. Shards of different N under one
// prefix are refused: their cells overlap.
func (s *Store) Inspect(ctx context.Context, u URL) (*Prefix, error) {
	objs, err := s.List(ctx, u)
	if err != nil {
		return nil, err
	}
	p := &Prefix{URL: u, Shards: map[int]*ShardState{}}
	for _, o := range objs {
		kind, k, n, seq, ok := parseName(strings.TrimPrefix(o.Key, u.Prefix))
		if !ok || k > n || n > maxShards {
			p.Other++
			continue
		}
		if p.N != 0 && p.N != n {
			return nil, fmt.Errorf("%s holds shards of runs in %d and in %d: %w; their cells overlap, keep one run per prefix", u, p.N, n, ErrOtherRun)
		}
		p.N = n
		st := p.Shards[k]
		if st == nil {
			st = &ShardState{Shard: Shard{k, n}}
			p.Shards[k] = st
		}
		switch kind {
		case nameResults:
			st.Results, st.ResultsSize = true, o.Size
		case nameSummary:
			st.Summary = true
		case namePart:
			st.Parts = append(st.Parts, Part{Key: o.Key, Seq: seq, Size: o.Size})
		}
	}
	for _, st := range p.Shards {
		slices.SortStableFunc(st.Parts, func(a, b Part) int { return a.Seq - b.Seq })
		if st.Results {
			if st.Through, err = s.through(ctx, u, st.resultsKey(u)); err != nil {
				return nil, err
			}
		}
		if st.Summary {
			if st.SummaryThru, err = s.through(ctx, u, st.summaryKey(u)); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// through reads an object's metaThrough.
func (s *Store) through(ctx context.Context, u URL, key string) (int, error) {
	meta, err := s.Head(ctx, u, key)
	if err != nil {
		return 0, err
	}
	v, ok := metaValue(meta, metaThrough)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: metadata %s=%q is not a part number", u.Of(key), metaThrough, safe(v))
	}
	return n, nil
}

// metaValue finds a user-metadata key whatever case the store gave it.
func metaValue(meta map[string]string, key string) (string, bool) {
	for k, v := range meta {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// Unfinished lists the shards, of 1..N, whose run has not ended: missing
// or still holding parts (in flight, or killed).
func (p *Prefix) Unfinished() []Shard {
	var out []Shard
	for k := 1; k <= p.N; k++ {
		if st := p.Shards[k]; st == nil || !st.Finished() {
			out = append(out, Shard{k, p.N})
		}
	}
	return out
}

// Shard returns the state of shard K of N (empty when nothing is
// stored).
func (p *Prefix) Shard(sh Shard) *ShardState {
	if st := p.Shards[sh.K]; st != nil && st.N == sh.N {
		return st
	}
	return &ShardState{Shard: sh}
}
