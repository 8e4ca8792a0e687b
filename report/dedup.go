package report

import (
	"bufio"
	"fmt"
	"io"

	"github.com/pikit-go/pikit/judge"
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
// result, once to write. A source whose last line is half-written is an
// error naming it.
func Dedup(srcs []Source, w io.Writer) (DedupStats, error) {
	const seen, good, written = 1, 2, 4
	state := map[string]uint8{}
	var st DedupStats
	for _, src := range srcs {
		err := scanSource(src, func(li LineInfo) error {
			s := state[li.Key] | seen
			if li.Outcome != judge.RuntimeError {
				s |= good
			}
			state[li.Key] = s
			return nil
		})
		if err != nil {
			return st, err
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	for _, src := range srcs {
		err := scanSource(src, func(li LineInfo) error {
			s := state[li.Key]
			if s&written != 0 || (s&good != 0 && li.Outcome == judge.RuntimeError) {
				st.Duplicates++
				return nil
			}
			state[li.Key] = s | written
			st.Kept++
			if s&good == 0 {
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

// scanSource reads one source with ScanKeys.
func scanSource(src Source, fn func(LineInfo) error) error {
	rc, err := src.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	partial, err := ScanKeys(rc, fn)
	if err != nil {
		return fmt.Errorf("%s: %w", src.Name, err)
	}
	if partial != nil {
		return fmt.Errorf("%s: the last line is incomplete", src.Name)
	}
	return nil
}
