package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/result"
)

// Source is one JSONL results stream that can be opened more than once.
type Source struct {
	Name string // for errors: a file or an object's address
	Open func() (io.ReadCloser, error)
}

// DedupStats counts what Dedup wrote.
type DedupStats struct {
	Kept       int // results written, one per key
	Duplicates int // lines dropped for a key already written
	Errors     int // keys whose only results are runtime errors (one kept)
}

// Dedup writes the results of srcs to w in order, each cell key once: its
// first result that is not a runtime error, or its first result when
// every one is (a resumed run's rerun of a failed cell wins over the
// failure). It reads srcs twice: once for the keys that have such a
// result (Deduper.Scan), once to write (Deduper.Write). A source whose
// last line is half-written is an error naming it.
func Dedup(srcs []Source, w io.Writer) (DedupStats, error) {
	d := NewDeduper()
	if err := d.Scan(srcs); err != nil {
		return DedupStats{}, err
	}
	return d.Write(srcs, w)
}

// Deduper is Dedup in its two passes, for a caller that acts between
// them (pikit merge checks its output only once its inputs have read
// as results) or asks afterwards which keys were written.
type Deduper struct {
	// Check has Scan read each line as a result (the key alone
	// otherwise): a line that is not one, or whose verdict is not one
	// (an unknown outcome, a success flag that disagrees with it), is
	// an error naming its source and line, as Scan's readers refuse it.
	Check bool
	state map[string]uint8
}

const (
	dedupSeen = 1 << iota
	dedupGood
	dedupWritten
)

// NewDeduper returns a Deduper with nothing read.
func NewDeduper() *Deduper { return &Deduper{state: map[string]uint8{}} }

// Scan reads srcs for the keys that have a result other than a runtime
// error.
func (d *Deduper) Scan(srcs []Source) error {
	var dec result.Decoder
	var brief result.Brief
	for _, src := range srcs {
		err := scanSource(src, func(li LineInfo) error {
			if d.Check {
				brief = result.Brief{}
				if err := dec.Decode(li.Line, &brief); err != nil {
					return dataErrorf(src.Name, li.Number, err, "not a result")
				}
			}
			s := d.state[li.Key] | dedupSeen
			if li.Outcome != judge.RuntimeError {
				s |= dedupGood
			}
			d.state[li.Key] = s
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Write writes srcs to w, each key once (see Dedup).
func (d *Deduper) Write(srcs []Source, w io.Writer) (DedupStats, error) {
	var st DedupStats
	bw := bufio.NewWriterSize(w, 1<<20)
	for _, src := range srcs {
		err := scanSource(src, func(li LineInfo) error {
			s := d.state[li.Key]
			if s&dedupWritten != 0 || (s&dedupGood != 0 && li.Outcome == judge.RuntimeError) {
				st.Duplicates++
				return nil
			}
			d.state[li.Key] = s | dedupWritten
			st.Kept++
			if s&dedupGood == 0 {
				st.Errors++
			}
			bw.Write(li.Line)
			return bw.WriteByte('\n')
		})
		if err != nil {
			return st, err
		}
	}
	return st, bw.Flush()
}

// Written reports whether Write wrote a result of key.
func (d *Deduper) Written(key string) bool { return d.state[key]&dedupWritten != 0 }

// scanSource reads one source with ScanKeys.
func scanSource(src Source, fn func(LineInfo) error) error {
	rc, err := src.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	partial, err := ScanKeys(rc, fn)
	switch {
	case errors.Is(err, ErrNotResults):
		return err // named already
	case err != nil:
		return fmt.Errorf("%s: %w", src.Name, err)
	}
	if partial != nil {
		return fmt.Errorf("%s: the last line is incomplete (an interrupted run?); finish it with --resume first", src.Name)
	}
	return nil
}
