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
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// ErrNotResults is wrapped by every error about what a file holds: it is
// not pikit results (in pikit's or the Python pikit's schema), or one of
// its results is malformed. Such errors name the file and the line.
var ErrNotResults = errors.New("not pikit results")

// maxLine bounds one JSONL line or JSON array element (a result with a
// long trace).
const maxLine = 64 << 20

// What a result must carry to be read as one: a verdict and something
// naming the cell.
const (
	wantResult = `a JSON object with "outcome" or "success" and at least one of "attack", "agent", "key"`
	wantHeader = `a header with an "outcome" or "success" column and an "attack", "agent" or "key" column`
)

// wantOutcome lists the outcomes a result may have.
var wantOutcome = func() string {
	names := make([]string, len(judge.Outcomes))
	for i, o := range judge.Outcomes {
		names[i] = string(o)
	}
	return "one of " + strings.Join(names, ", ")
}()

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
const RepeatSummarySignal = "repeat_summary"

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
	s := &scanner{name: name, fn: fn, skip: skip, intern: map[string]string{}, specs: map[string]string{}}
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
	name   string
	fn     func(*Record) error
	skip   SkipFunc // nil: a line that is not a result ends the scan
	rec    Record
	intern map[string]string // values that repeat: attack names, outcomes, …
	specs  map[string]string // method_specs as written → canonical
}

// maxIntern bounds the interning tables: past it, new values are still
// decoded, just not shared.
const maxIntern = 4096

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
	if err := s.decode(b, &s.rec); err != nil {
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
		return s.errorf(c.line, nil, "want a JSON array of results, got %s", describe(c.buf[c.pos:]))
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
			case errors.Is(err, errTruncated):
				return s.errorf(line, nil, "not a result: the file ends inside it")
			case errors.Is(err, errTooLong):
				return s.errorf(line, nil, "a result longer than %d MiB", maxLine>>20)
			case errors.Is(err, errSyntax):
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
				return s.errorf(c.line, nil, "invalid JSON: want , or ] after an array element, got %s", describe(c.buf[c.pos:]))
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
		return s.errorf(c.line, nil, "invalid JSON: more after the array's closing ]: %s", describe(c.buf[c.pos:]))
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

// csvResult makes a result of a CSV row, by column name. The verdict must
// be one: an outcome cell, when there is one and it is not empty, holds
// one of judge.Outcomes, and a success cell holds true or false (in any
// case: the Python pikit writes True and False); without an outcome the
// success cell is the verdict. Other typed cells (sink_fired, the
// integers) are empty or of their type. The error names the column.
func csvResult(col map[string]int, rec []string) (matrix.Result, error) {
	get := func(name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return rec[i]
		}
		return ""
	}
	var bad error
	flag := func(name string, optional bool) bool {
		v := get(name)
		switch {
		case strings.EqualFold(v, "true"):
			return true
		case strings.EqualFold(v, "false"), v == "" && optional:
			return false
		}
		if bad == nil {
			bad = fmt.Errorf("column %q: want true or false, got %s", name, describeCell(v))
		}
		return false
	}
	integer := func(name string) int64 {
		v := get(name)
		if v == "" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil && bad == nil {
			bad = fmt.Errorf("column %q: want an integer, got %s", name, describeCell(v))
		}
		return n
	}
	res := matrix.Result{
		Attack: get("attack"), Defense: get("defense"), Channel: get("channel"), Agent: get("agent"),
		Target: get("target"), Confidence: get("confidence"), Reason: get("reason"),
		FinalText: get("final_text"), Timestamp: get("timestamp"), Key: get("key"),
		Outcome: judge.Outcome(get("outcome")), CaseID: get("case_id"), CaseDescription: get("case_description"),
		Task: get("task"), RunID: get("run_id"), Error: get("error"),
	}
	if res.Outcome != "" && !res.Outcome.Valid() {
		return res, fmt.Errorf("column \"outcome\": want %s; got %s", wantOutcome, describeCell(string(res.Outcome)))
	}
	_, hasSuccess := col["success"]
	if res.Outcome == "" && !hasSuccess {
		return res, fmt.Errorf("the \"outcome\" cell is empty and there is no \"success\" column: want %s", wantOutcome)
	}
	if hasSuccess {
		res.Success = flag("success", false)
	}
	res.SinkFired = flag("sink_fired", true)
	res.RepeatIndex = int(integer("repeat_index"))
	res.Seed = integer("seed")
	res.LatencyMS = integer("latency_ms")
	res.ModelLatencyMS = integer("model_latency_ms")
	res.Attempts, res.Retries = int(integer("attempts")), int(integer("retries"))
	res.Usage.PromptTokens, res.Usage.CompletionTokens = int(integer("prompt_tokens")), int(integer("completion_tokens"))
	if bad != nil {
		return res, bad
	}
	if s := get("signals"); s != "" {
		res.Signals = strings.Split(s, ";")
	}
	// What the verdict was judged against, when the file says.
	if payload, canary, args, re := get("payload"), get("canary"), get("sink_args"), get("canary_regex"); payload != "" || canary != "" || args != "" || re != "" {
		j := &matrix.JudgedAgainst{Task: res.Task, Payload: payload, Canary: canary, CanaryRegex: re, Criteria: get("judge_criteria"), RequireSink: flag("require_sink", false)}
		if f := get("canary_fuzzy"); f != "" {
			n, err := strconv.Atoi(f)
			if err != nil || n < 0 || n > 100 {
				return res, fmt.Errorf("column \"canary_fuzzy\": want a score from 0 to 100, got %s", describeCell(f))
			}
			j.CanaryFuzzy = n
		}
		if args != "" {
			if err := json.Unmarshal([]byte(args), &j.SinkArgs); err != nil {
				return res, fmt.Errorf("column \"sink_args\": want a JSON object of strings, got %s", describeCell(args))
			}
		}
		res.JudgedAgainst = j
	}
	if bench, labels := get("benchmark"), get("labels"); bench != "" || labels != "" {
		res.Metadata = map[string]any{}
		if bench != "" {
			res.Metadata["benchmark"] = bench
		}
		if labels != "" {
			var l map[string]any
			if err := json.Unmarshal([]byte(labels), &l); err != nil {
				return res, fmt.Errorf("column \"labels\": want a JSON object, got %s", describeCell(labels))
			}
			res.Metadata["labels"] = l
		}
	}
	normalize(&res)
	return res, nil
}

// describeCell shows a cell's value in an error, "an empty cell" for "".
func describeCell(v string) string {
	if v == "" {
		return "an empty cell"
	}
	return describe([]byte(v))
}

// describe shows the start of some unexpected text, quoted (so nothing in
// it reaches a terminal raw).
func describe(b []byte) string {
	if len(b) == 0 {
		return "the end of the file"
	}
	if len(b) > 24 {
		b = b[:24]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
		return strconv.Quote(string(b)) + "…"
	}
	return strconv.Quote(string(b))
}

// decode fills rec from one result's JSON text, decoding only the fields a
// Record holds and checking the structure of the rest as it skips it.
func (s *scanner) decode(b []byte, rec *Record) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return fmt.Errorf("want %s, got %s", wantResult, describe(b[i:]))
	}
	var hasOutcome, hasSuccess, named bool
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return fmt.Errorf("want %s, got an empty object", wantResult)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return errSyntax
		}
		end, ok := stringEnd(b, i)
		if !ok {
			return errSyntax
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(b[i:end], &k) != nil {
				return errSyntax
			}
			key = []byte(k)
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return errSyntax
		}
		i = skipSpace(b, i+1)
		start := i
		var err error
		if i, err = skipValue(b, i, 0); err != nil {
			return err
		}
		v := b[start:i]
		switch string(key) {
		case "key":
			rec.Key, err = s.str(key, v, false)
			named = true
		case "attack":
			rec.Attack, err = s.str(key, v, true)
			named = true
		case "agent":
			rec.Agent, err = s.str(key, v, true)
			named = true
		case "defense":
			rec.Defense, err = s.str(key, v, true)
		case "channel":
			rec.Channel, err = s.str(key, v, true)
		case "target":
			rec.Target, err = s.str(key, v, true)
		case "case_id":
			rec.CaseID, err = s.str(key, v, true)
		case "reason":
			rec.Reason, err = s.str(key, v, false)
		case "error":
			rec.Error, err = s.str(key, v, false)
		case "outcome":
			rec.Outcome, err = s.outcome(key, v)
			hasOutcome = true
		case "success":
			rec.Success, err = verdictValue(key, v)
			hasSuccess = true
		case "utility":
			var ok, set bool
			if ok, set, err = boolValue(key, v); set {
				rec.setUtility(ok)
			}
		case "repeat_index":
			rec.RepeatIndex, err = intValue(key, v)
		case "attempts":
			rec.Attempts, err = intValue(key, v)
		case "retries":
			rec.Retries, err = intValue(key, v)
		case "method_specs":
			rec.MethodSpecs, err = s.methodSpecs(v)
		case "trace_data":
			rec.ToolCallsFailed = toolCallsFailed(v)
		case "signals":
			rec.RepeatSummary = bytes.Contains(v, []byte(`"`+RepeatSummarySignal+`"`))
		case "metadata":
			// Only a benchmark name is read from it, and only when the
			// word is there at all; the text is kept for the readers of
			// adaptive searches (the last metadata is the one, as
			// encoding/json reads it).
			rec.metadata = v
			if bytes.Contains(v, []byte(`"benchmark"`)) || bytes.Contains(v, []byte(`"labels"`)) {
				var m struct {
					Benchmark string            `json:"benchmark"`
					Labels    map[string]string `json:"labels"`
				}
				if json.Unmarshal(v, &m) == nil {
					rec.Benchmark, rec.Labels = m.Benchmark, m.Labels
				}
			}
		}
		if err != nil {
			return err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return errSyntax
		}
		if b[i] == '}' {
			i++
			break
		}
		if b[i] != ',' {
			return errSyntax
		}
		i = skipSpace(b, i+1)
	}
	if i = skipSpace(b, i); i != len(b) {
		return errSyntax
	}
	switch {
	case hasOutcome && rec.Outcome == "" && !hasSuccess:
		return fmt.Errorf("field \"outcome\" is empty and there is no \"success\" field: want %s", wantOutcome)
	case !hasOutcome && !hasSuccess, !named:
		return fmt.Errorf("want %s", wantResult)
	}
	return nil
}

// outcome decodes an outcome: one of judge.Outcomes, or "" for none (a
// result judged by its success flag alone, as the Python pikit's are;
// pikit's writers write such a result's outcome as ""). null is refused:
// no writer writes it.
func (s *scanner) outcome(key, v []byte) (judge.Outcome, error) {
	if string(v) == "null" {
		return "", fmt.Errorf("field %q: want %s; got null", key, wantOutcome)
	}
	o, err := s.str(key, v, true)
	if err != nil {
		return "", err
	}
	if out := judge.Outcome(o); out == "" || out.Valid() {
		return out, nil
	}
	return "", fmt.Errorf("field %q: want %s; got %s", key, wantOutcome, describe([]byte(o)))
}

// verdictValue decodes a success flag: true or false, never null.
func verdictValue(key, v []byte) (bool, error) {
	ok, set, err := boolValue(key, v)
	if err == nil && !set {
		err = fmt.Errorf("field %q: want true or false, got %s", key, describe(v))
	}
	return ok, err
}

// toolCallsFailed reports whether a trace's JSON text holds tool steps
// (kind "tool") and each of them an error (see Record.ToolCallsFailed).
// The text's structure was checked as it was skipped; only a trace with
// the key "error" in it is walked.
func toolCallsFailed(trace []byte) bool {
	if !bytes.Contains(trace, []byte(`"error"`)) {
		return false
	}
	var steps []byte
	eachField(trace, func(key, v []byte) {
		if string(key) == "steps" {
			steps = v
		}
	})
	tools, failed := 0, 0
	eachElement(steps, func(step []byte) {
		var tool, errored bool
		eachField(step, func(key, v []byte) {
			switch string(key) {
			case "kind":
				tool = string(v) == `"tool"`
			case "error":
				errored = string(v) != `""` && string(v) != "null"
			}
		})
		if tool {
			tools++
			if errored {
				failed++
			}
		}
	})
	return tools > 0 && failed == tools
}

// eachField calls fn with each key (unescaped) and value of a JSON object
// whose structure is known to be sound; anything but an object calls it
// for nothing.
func eachField(b []byte, fn func(key, v []byte)) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	for i = skipSpace(b, i+1); i < len(b) && b[i] == '"'; {
		end, ok := stringEnd(b, i)
		if !ok {
			return
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(b[i:end], &k) != nil {
				return
			}
			key = []byte(k)
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return
		}
		start := skipSpace(b, i+1)
		stop, err := skipValue(b, start, 0)
		if err != nil {
			return
		}
		fn(key, b[start:stop])
		if i = skipSpace(b, stop); i >= len(b) || b[i] != ',' {
			return
		}
		i = skipSpace(b, i+1)
	}
}

// eachElement calls fn with each element of a JSON array whose structure
// is known to be sound; anything but an array calls it for nothing.
func eachElement(b []byte, fn func(v []byte)) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return
	}
	for i = skipSpace(b, i+1); i < len(b) && b[i] != ']'; {
		stop, err := skipValue(b, i, 0)
		if err != nil {
			return
		}
		fn(b[i:stop])
		if i = skipSpace(b, stop); i >= len(b) || b[i] != ',' {
			return
		}
		i = skipSpace(b, i+1)
	}
}

// str decodes a JSON string value (null is ""), interned when the value
// is one that repeats across results.
func (s *scanner) str(key, v []byte, intern bool) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		if string(v) == "null" {
			return "", nil
		}
		return "", fmt.Errorf("field %q: want a string, got %s", key, describe(v))
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
		var out string // escapes and invalid UTF-8, exactly as encoding/json
		if err := json.Unmarshal(v, &out); err != nil {
			return "", fmt.Errorf("field %q: %w", key, err)
		}
		return out, nil
	}
	if !intern {
		return string(body), nil
	}
	if out, ok := s.intern[string(body)]; ok {
		return out, nil
	}
	out := string(body)
	if len(s.intern) < maxIntern {
		s.intern[out] = out
	}
	return out, nil
}

// methodSpecs returns method_specs in the form RecordOf gives it: the
// object decoded and encoded again, so spacing and key order do not
// matter.
func (s *scanner) methodSpecs(v []byte) (string, error) {
	if string(v) == "null" {
		return "", nil
	}
	if out, ok := s.specs[string(v)]; ok {
		return out, nil
	}
	var m map[string]matrix.Spec
	if err := json.Unmarshal(v, &m); err != nil {
		return "", fmt.Errorf("field \"method_specs\": %w", err)
	}
	out := ""
	if m != nil {
		b, err := matrix.SpecsKey(m)
		if err != nil {
			return "", fmt.Errorf("field \"method_specs\": %w", err)
		}
		out = string(b)
	}
	if len(s.specs) < maxIntern {
		s.specs[string(v)] = out
	}
	return out, nil
}

// boolValue decodes true, false or null (set false).
func boolValue(key, v []byte) (val, set bool, err error) {
	switch string(v) {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	case "null":
		return false, false, nil
	}
	return false, false, fmt.Errorf("field %q: want true or false, got %s", key, describe(v))
}

// intValue decodes an integer (null is 0).
func intValue(key, v []byte) (int, error) {
	if string(v) == "null" {
		return 0, nil
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return 0, fmt.Errorf("field %q: want an integer, got %s", key, describe(v))
	}
	return n, nil
}

var errSyntax = errors.New("invalid JSON")

// errTruncated is skipValue's error when the text ends inside a value.
var errTruncated = errors.New("unexpected end of JSON")

// maxDepth bounds the nesting skipValue follows.
const maxDepth = 10000

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the JSON string that starts at
// b[i] (a quote), and false when it does not end in b.
func stringEnd(b []byte, i int) (int, bool) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b), false
		}
		j += k
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, true
		}
		j++
	}
}

// skipValue returns the index just past the JSON value starting at b[i],
// checking its structure: strings end, brackets match, objects hold
// "key": value pairs, literals and numbers are well formed. (The insides
// of strings are not checked.) It returns errTruncated when b ends inside
// the value.
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, errTruncated
	}
	switch c := b[i]; {
	case c == '"':
		end, ok := stringEnd(b, i)
		if !ok {
			return end, errTruncated
		}
		return end, nil
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return i, errors.New("JSON nested too deeply")
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return i, errTruncated
		}
		if b[i] == closer {
			return i + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if i >= len(b) {
					return i, errTruncated
				}
				if b[i] != '"' {
					return i, errSyntax
				}
				end, ok := stringEnd(b, i)
				if !ok {
					return end, errTruncated
				}
				i = skipSpace(b, end)
				if i >= len(b) {
					return i, errTruncated
				}
				if b[i] != ':' {
					return i, errSyntax
				}
				i = skipSpace(b, i+1)
			}
			if i, err = skipValue(b, i, depth+1); err != nil {
				return i, err
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, errTruncated
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case closer:
				return i + 1, nil
			default:
				return i, errSyntax
			}
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return number(b, i)
	}
	return i, errSyntax
}

func literal(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) {
		if string(b[i:]) == lit[:len(b)-i] {
			return len(b), errTruncated
		}
		return i, errSyntax
	}
	if string(b[i:i+len(lit)]) != lit {
		return i, errSyntax
	}
	return i + len(lit), nil
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// A number that reaches the end of b may go on past it: errTruncated.
func number(b []byte, i int) (int, error) {
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	bad := func() (int, error) {
		if i == len(b) {
			return i, errTruncated
		}
		return i, errSyntax
	}
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return bad()
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return bad()
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return bad()
		}
	}
	if i == len(b) {
		return i, errTruncated
	}
	return i, nil
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
		end, err := skipValue(c.buf, c.pos, 0)
		if err == nil {
			return c.buf[c.pos:end], nil
		}
		if err != errTruncated {
			return nil, err
		}
		if len(c.buf)-c.pos > maxLine {
			return nil, errTooLong
		}
		if !c.fill() {
			if c.err != nil {
				return nil, c.err
			}
			return nil, errTruncated
		}
	}
}
