package report

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/result"
)

// ErrNotResults is wrapped by every error about what a file holds: it is
// not pikit results (in pikit's or the Python pikit's schema), or one of
// its results is malformed. Such errors name the file and the line.
var ErrNotResults = errors.New("not pikit results")

// maxLine bounds one JSONL line or JSON array element (a result with a
// long trace).
const maxLine = 64 << 20

// What a CSV file must have to be read as results: a verdict column and
// one naming the cell.
const wantHeader = `a header with an "outcome" or "success" column and an "attack", "agent" or "key" column`

// dataError is an error about a file's content at a line.
type dataError struct {
	file string
	line int
	msg  string
	err  error
}

// dataErrorf makes an error about a file's content at a line; err, when
// not nil, is wrapped and its text follows the message.
func dataErrorf(file string, line int, err error, format string, a ...any) error {
	return &dataError{file: file, line: line, msg: fmt.Sprintf(format, a...), err: err}
}

// Error says "file:line: message", or "line N: message" for a stream
// without a name.
func (e *dataError) Error() string {
	s := e.msg
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	switch {
	case e.file == "":
		return fmt.Sprintf("line %d: %s", e.line, s)
	case e.line > 0:
		return fmt.Sprintf("%s:%d: %s", e.file, e.line, s)
	}
	return e.file + ": " + s
}

func (e *dataError) Unwrap() error { return e.err }

// Is makes every dataError match ErrNotResults.
func (e *dataError) Is(target error) bool { return target == ErrNotResults }

// InputFormats lists the results formats Scan reads, by extension.
var InputFormats = []string{".jsonl", ".json", ".csv"}

// InputFormatOf returns the results format of a path from its extension
// ("-" is standard input, JSONL), or an error naming the known ones.
func InputFormatOf(path string) (string, error) {
	if path == "-" {
		return ".jsonl", nil
	}
	ext := strings.ToLower(filepath.Ext(path))
	for _, f := range InputFormats {
		if ext == f {
			return f, nil
		}
	}
	// What pikit writes for an extension it has no format of, as the
	// Python pikit does: JSON.
	return ".json", nil
}

// ScanFile reads a results file, its format chosen by extension ("-" is
// standard input, read as JSONL), calling fn with each result's Record.
// See Scan.
func ScanFile(path string, fn func(*Record) error) error {
	format, err := InputFormatOf(path)
	if err != nil {
		return err
	}
	if path == "-" {
		return Scan(os.Stdin, path, format, fn)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return Scan(f, path, format, fn)
}

// RepeatSummarySignal marks a repeat-summary row: the success count of a
// combination's repeats, written after them, not a cell of its own.
const RepeatSummarySignal = result.RepeatSummarySignal

// Scan reads results in format (".jsonl", ".json" or ".csv") from r and
// calls fn with each one's Record, in file order (a repeat-summary row,
// see RepeatSummarySignal, is passed over); name is the file's name
// in errors ("" for none). The Record, and the text its Result decodes,
// are valid only during the call. Only the fields a Record holds are
// decoded; the rest of each result (its trace, its texts) is checked for
// JSON structure and skipped without being kept, so memory does not grow
// with the file. A file of nothing but white space holds no results.
//
// A file that is not results is an error wrapping ErrNotResults, naming
// the line: every JSONL line (blank lines aside) and JSON array element
// must be a JSON object with an "outcome" or "success" field and at least
// one of "attack", "agent" or "key", fields of the wrong type are errors,
// and a CSV file needs a header with an "outcome" or "success" column and
// an "attack", "agent" or "key" column, and each row one field per column.
// A verdict must be one: an outcome is one of judge.Outcomes (or "", for a
// result judged by its success flag alone, which must then be there), never
// null; a success flag is true or false (in CSV in any case, as the Python
// pikit writes True), never null or empty. A UTF-8 byte-order mark at the
// start of the file is passed over. pikit's JSONL, JSON and CSV and the
// Python pikit's JSON and CSV result files all qualify. An error returned
// by fn stops the scan and is returned as it is.
func Scan(r io.Reader, name, format string, fn func(*Record) error) error {
	return ScanSkipping(r, name, format, fn, nil)
}

// SkipFunc is told of a JSONL line ScanSkipping passes over: its number
// and why it is not a result (without the file and line). An error it
// returns stops the scan and is returned as it is.
type SkipFunc func(line int, why string) error

// ScanSkipping is Scan that, for JSONL, goes on past a line that is not a
// result (malformed, of the wrong shape, or longer than the reader takes)
// after telling skip, where Scan would stop; a nil skip makes it Scan.
// JSON and CSV files are read as Scan reads them.
func ScanSkipping(r io.Reader, name, format string, fn func(*Record) error, skip SkipFunc) error {
	s := &scanner{name: name, fn: fn, skip: skip}
	switch format {
	case ".jsonl", ".json", ".csv":
		var err error
		if r, err = dropBOM(r); err != nil {
			return s.ioError(0, err)
		}
	}
	switch format {
	case ".jsonl":
		return s.jsonl(r)
	case ".json":
		return s.jsonArray(r)
	case ".csv":
		return s.csv(r)
	}
	return fmt.Errorf("%s: unknown results format %q; use one of %s", name, format, strings.Join(InputFormats, ", "))
}

// bom is the UTF-8 byte-order mark some editors put at the start of a
// text file.
const bom = "\ufeff"

// dropBOM returns r without the byte-order mark at its start, if it has
// one.
func dropBOM(r io.Reader) (io.Reader, error) {
	head := make([]byte, len(bom))
	n, err := io.ReadFull(r, head)
	switch {
	case err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF):
		return nil, err
	case n == len(bom) && string(head) == bom:
		return r, nil
	}
	return io.MultiReader(bytes.NewReader(head[:n]), r), nil
}

// scanner reads one file's results.
type scanner struct {
	name string
	fn   func(*Record) error
	skip SkipFunc // nil: a line that is not a result ends the scan
	rec  Record
	dec  result.Decoder
}

func (s *scanner) errorf(line int, err error, format string, a ...any) error {
	return dataErrorf(s.name, line, err, format, a...)
}

// ioError is a read error, not about the content: it names the file (and
// the line, when known) without wrapping ErrNotResults.
func (s *scanner) ioError(line int, err error) error {
	switch {
	case s.name == "":
		return err
	case line > 0:
		return fmt.Errorf("%s:%d: %w", s.name, line, err)
	}
	return fmt.Errorf("%s: %w", s.name, err)
}

// emit decodes one result's JSON text and hands it to fn.
func (s *scanner) emit(b []byte, line int) error {
	if err := s.record(b, line); err != nil {
		return err
	}
	if s.rec.RepeatSummary {
		return nil // a summary of other rows, not a cell
	}
	return s.fn(&s.rec)
}

// record decodes one result's JSON text into s.rec; an error says why it
// is not a result.
func (s *scanner) record(b []byte, line int) error {
	s.rec = Record{Line: line, raw: b, file: s.name}
	if err := s.dec.Decode(b, &s.rec.Brief); err != nil {
		if bytes.HasPrefix(b, []byte(bom)) {
			return s.errorf(line, nil, "not a result: a byte-order mark (U+FEFF) starts the line; only the file's start may have one (were files joined?)")
		}
		// Prefer encoding/json's words for a syntax error.
		var v json.RawMessage
		if jerr := json.Unmarshal(b, &v); jerr != nil {
			return s.errorf(line, jerr, "not a result: invalid JSON")
		}
		return s.errorf(line, nil, "not a result: %v", err)
	}
	s.rec.normalize()
	return nil
}

// refuse ends the scan with err, a line that is not a result, or passes
// over the line after telling s.skip.
func (s *scanner) refuse(err error) error {
	var de *dataError
	if s.skip == nil || !errors.As(err, &de) {
		return err
	}
	why := de.msg
	if de.err != nil {
		why += ": " + de.err.Error()
	}
	return s.skip(de.line, why)
}

// jsonl reads one result per line.
func (s *scanner) jsonl(r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		tooLong := false
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if !tooLong && len(long) > maxLine {
					if rerr := s.refuse(s.errorf(n, nil, "line longer than %d MiB", maxLine>>20)); rerr != nil {
						return rerr
					}
					tooLong, long = true, long[:0] // passed over: read to its end
				}
				line, err = br.ReadSlice('\n')
				if !tooLong {
					long = append(long, line...)
				}
			}
			line = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return s.ioError(n, err)
		}
		if body := bytes.TrimSpace(line); len(body) > 0 && !tooLong {
			if rerr := s.record(body, n); rerr != nil {
				if rerr = s.refuse(rerr); rerr != nil {
					return rerr
				}
			} else if !s.rec.RepeatSummary { // a summary row is not a cell
				if ferr := s.fn(&s.rec); ferr != nil {
					return ferr
				}
			}
		}
		if err != nil { // io.EOF
			return nil
		}
	}
}

// jsonArray reads a JSON array of results (pikit's .json and the Python
// pikit's save_json), one element at a time.
func (s *scanner) jsonArray(r io.Reader) error {
	c := &chunks{r: r, buf: make([]byte, 0, 1<<20), line: 1}
	if err := c.skipSpace(); err != nil {
		return s.ioError(0, err)
	}
	if c.atEOF() {
		return nil // an empty file: no results
	}
	if c.peek() != '[' {
		return s.errorf(c.line, nil, "want a JSON array of results, got %s", result.Describe(c.buf[c.pos:]))
	}
	c.pos++
	if err := s.arraySpace(c); err != nil {
		return err
	}
	if c.peek() == ']' {
		c.pos++
	} else {
		for {
			line := c.line
			elem, err := c.value()
			switch {
			case errors.Is(err, result.ErrTruncated):
				return s.errorf(line, nil, "not a result: the file ends inside it")
			case errors.Is(err, errTooLong):
				return s.errorf(line, nil, "a result longer than %d MiB", maxLine>>20)
			case errors.Is(err, result.ErrSyntax):
				return s.errorf(line, err, "not a result")
			case err != nil:
				return s.ioError(line, err)
			}
			if err := s.emit(elem, line); err != nil {
				return err
			}
			c.advance(len(elem))
			if err := s.arraySpace(c); err != nil {
				return err
			}
			if c.peek() == ']' {
				c.pos++
				break
			}
			if c.peek() != ',' {
				return s.errorf(c.line, nil, "invalid JSON: want , or ] after an array element, got %s", result.Describe(c.buf[c.pos:]))
			}
			c.pos++
			if err := s.arraySpace(c); err != nil {
				return err
			}
		}
	}
	if err := c.skipSpace(); err != nil {
		return s.ioError(0, err)
	}
	if !c.atEOF() {
		return s.errorf(c.line, nil, "invalid JSON: more after the array's closing ]: %s", result.Describe(c.buf[c.pos:]))
	}
	return nil
}

// arraySpace moves past white space inside the array; the file must not
// end there.
func (s *scanner) arraySpace(c *chunks) error {
	if err := c.skipSpace(); err != nil {
		return s.ioError(0, err)
	}
	if c.atEOF() {
		return s.errorf(c.line, nil, "the JSON array is not closed: the file ends inside it")
	}
	return nil
}

// csv reads results from CSV by header names: pikit's columns or the
// Python pikit's. Every row has one field per header column, and its
// typed cells hold what pikit's CSV writer writes there (see csvResult).
func (s *scanner) csv(r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	if head, _ := br.Peek(4096); len(bytes.TrimSpace(head)) == 0 && len(head) < 4096 {
		return nil // an empty file: no results
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1 // checked here, to say which line and how
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return s.csvError(err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	has := func(names ...string) bool {
		for _, n := range names {
			if _, ok := col[n]; ok {
				return true
			}
		}
		return false
	}
	if !has("outcome", "success") || !has("attack", "agent", "key") {
		shown := strings.Join(header, ",")
		if len(shown) > 200 {
			shown = shown[:200] + "…"
		}
		return s.errorf(1, nil, "not a pikit results CSV: want %s; got %q", wantHeader, shown)
	}
	fields := len(header)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return s.csvError(err)
		}
		line, _ := cr.FieldPos(0) // a row read without error has a field
		if len(rec) != fields {
			return s.errorf(line, nil, "not a result: the row has %s, want %d, one per header column", plural(len(rec), "field"), fields)
		}
		res, err := csvResult(col, rec)
		if err != nil {
			return s.errorf(line, nil, "not a result: %v", err)
		}
		s.rec = recordOf(&res)
		s.rec.Line, s.rec.file = line, s.name
		if s.rec.RepeatSummary {
			continue // a summary of other rows, not a cell
		}
		if err := s.fn(&s.rec); err != nil {
			return err
		}
	}
}

// csvError is the error of a CSV file the csv package cannot read: a
// quote left open, a bare quote in an unquoted field.
func (s *scanner) csvError(err error) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return s.ioError(0, err)
	}
	return s.errorf(pe.StartLine, err, "malformed CSV (want RFC 4180: a field holding a quote, a comma or a line break is quoted whole, its quotes doubled)")
}

// csvResult makes a result of a CSV row, by column name (see
// result.FromCSV).
func csvResult(col map[string]int, rec []string) (matrix.Result, error) {
	res, err := result.FromCSV(func(name string) (string, bool) {
		i, ok := col[name]
		if ok && i < len(rec) {
			return rec[i], true
		}
		return "", ok
	})
	if err == nil {
		normalize(&res)
	}
	return res, err
}

// errTooLong is chunks.value's error for an element over maxLine.
var errTooLong = errors.New("value too long")

// chunks reads a JSON text in chunks, handing out whole values.
type chunks struct {
	r    io.Reader
	buf  []byte
	pos  int
	line int // the line of buf[pos]
	eof  bool
	err  error
}

// fill reads more, keeping buf[pos:]; it reports false when nothing more
// can be read.
func (c *chunks) fill() bool {
	if c.eof || c.err != nil {
		return false
	}
	if c.pos > 0 {
		n := copy(c.buf, c.buf[c.pos:])
		c.buf, c.pos = c.buf[:n], 0
	}
	if len(c.buf) == cap(c.buf) {
		c.buf = append(c.buf, make([]byte, cap(c.buf))...)[:len(c.buf)]
	}
	n, err := c.r.Read(c.buf[len(c.buf):cap(c.buf)])
	c.buf = c.buf[:len(c.buf)+n]
	if errors.Is(err, io.EOF) {
		c.eof = true
	} else if err != nil {
		c.err = err
	}
	return n > 0 || (!c.eof && c.err == nil)
}

func (c *chunks) atEOF() bool { return c.pos >= len(c.buf) && (c.eof || c.err != nil) }

func (c *chunks) peek() byte { return c.buf[c.pos] }

// advance moves past n bytes, counting their lines.
func (c *chunks) advance(n int) {
	c.line += bytes.Count(c.buf[c.pos:c.pos+n], []byte{'\n'})
	c.pos += n
}

// skipSpace moves past white space, reading more as needed.
func (c *chunks) skipSpace() error {
	for {
		for c.pos < len(c.buf) {
			switch c.buf[c.pos] {
			case '\n':
				c.line++
				c.pos++
			case ' ', '\t', '\r':
				c.pos++
			default:
				return nil
			}
		}
		if !c.fill() {
			return c.err
		}
	}
}

// value returns the whole JSON value at pos (not consumed), reading more
// until it is complete.
func (c *chunks) value() ([]byte, error) {
	for {
		end, err := result.SkipValue(c.buf, c.pos)
		if err == nil {
			return c.buf[c.pos:end], nil
		}
		if err != result.ErrTruncated {
			return nil, err
		}
		if len(c.buf)-c.pos > maxLine {
			return nil, errTooLong
		}
		if !c.fill() {
			if c.err != nil {
				return nil, c.err
			}
			return nil, result.ErrTruncated
		}
	}
}
