package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pikit-go/pikit/judge"
)

// LineInfo is what ScanKeys reads of one JSONL result line.
type LineInfo struct {
	Key     string
	Outcome judge.Outcome
	Line    []byte // the line without its newline; valid only during the callback
	Number  int    // 1-based line number
}

var (
	keyPrefix     = []byte(`{"key":"`)
	outcomeMarker = []byte(`"outcome":"`)
)

// ScanKeys reads a JSONL results file line by line and reports each
// complete result's key and outcome, without decoding the rest of the line
// when it is in pikit's own field order (key first): a 1M-line file scans
// in well under a second. A line over 64 MiB is an error. A final line
// without its newline (a run killed mid-write) is reported through
// partial, not fn; any other unreadable line is an error naming its
// number.
func ScanKeys(r io.Reader, fn func(LineInfo) error) (partial []byte, err error) {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole.
			buf := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				buf = append(buf, line...)
				if len(buf) > maxLine {
					return nil, fmt.Errorf("line %d: longer than %d MiB", n, maxLine>>20)
				}
			}
			line = buf
		}
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(line)) > 0 {
				return append([]byte(nil), line...), nil
			}
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		body := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(body)) == 0 {
			continue
		}
		info, ok := fastKey(body)
		if !ok {
			var v struct {
				Key     string        `json:"key"`
				Outcome judge.Outcome `json:"outcome"`
			}
			if err := json.Unmarshal(body, &v); err != nil || v.Key == "" {
				return nil, fmt.Errorf("line %d: not a pikit result (no key)", n)
			}
			info = LineInfo{Key: v.Key, Outcome: v.Outcome}
		}
		info.Line, info.Number = body, n
		if err := fn(info); err != nil {
			return nil, err
		}
	}
}

// fastKey reads key and outcome from a line written by pikit's JSONL
// writer. Inside JSON strings every quote is escaped, so the first
// unescaped "outcome":" is the field itself.
func fastKey(line []byte) (LineInfo, bool) {
	if !bytes.HasPrefix(line, keyPrefix) || line[len(line)-1] != '}' {
		return LineInfo{}, false
	}
	rest := line[len(keyPrefix):]
	end := bytes.IndexByte(rest, '"')
	if end <= 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return LineInfo{}, false
	}
	info := LineInfo{Key: string(rest[:end])}
	i := bytes.Index(rest, outcomeMarker)
	if i < 0 {
		return LineInfo{}, false
	}
	o := rest[i+len(outcomeMarker):]
	j := bytes.IndexByte(o, '"')
	if j < 0 {
		return LineInfo{}, false
	}
	info.Outcome = judge.Outcome(o[:j])
	return info, true
}

// Resume prepares a JSONL results file for a resumed run: it returns the
// keys that already have a result, and rewrites the file (through a
// temporary file renamed over it) without runtime_error results, duplicate
// keys and a half-written last line, so the resumed run can append and the
// file ends with each key once. Files that need no change are not
// rewritten.
func Resume(path string) (done map[string]bool, dropped int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	done = map[string]bool{}
	var drop []int
	partial, err := ScanKeys(f, func(li LineInfo) error {
		if li.Outcome == judge.RuntimeError || done[li.Key] {
			drop = append(drop, li.Number)
			return nil
		}
		done[li.Key] = true
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	dropped = len(drop)
	if partial != nil {
		dropped++
	}
	if dropped == 0 {
		return done, 0, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, err
	}
	// Rewritten as any results file is: through a temporary file of mode
	// 0644 renamed over the file a link at path leads to.
	a, err := createAtomic(path)
	if err != nil {
		return nil, 0, err
	}
	bw := bufio.NewWriterSize(a, 1<<20)
	k := 0
	_, err = ScanKeys(f, func(li LineInfo) error {
		if k < len(drop) && drop[k] == li.Number {
			k++
			return nil
		}
		bw.Write(li.Line)
		return bw.WriteByte('\n')
	})
	if err == nil {
		err = bw.Flush()
	}
	if err := a.commit(err); err != nil {
		return nil, 0, fmt.Errorf("rewriting %s: %w", path, err)
	}
	return done, dropped, nil
}

// Append opens a JSONL results file for appending (a resumed run).
func Append(path string) (Writer, error) {
	if f, err := FormatOf(path); err != nil || f != ".jsonl" {
		return nil, fmt.Errorf("%s: --resume needs a .jsonl output", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &fileWriter{Writer: NewJSONL(f), f: f}, nil
}
