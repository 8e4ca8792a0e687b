package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/result"
)

// Writer receives results one at a time. Close finishes the output.
type Writer interface {
	Write(matrix.Result) error
	Close() error
}

// ErrExists is returned by Create for an existing file without force.
var ErrExists = errors.New("output file exists")

// Formats lists the output formats by extension.
var Formats = []string{".jsonl", ".json", ".csv"}

// FormatOf returns the format of a path from its extension: JSON for an
// extension pikit has no format of, as the Python pikit writes it (see
// KnownFormat). The error is kept for callers that check it; there is
// none today.
func FormatOf(path string) (string, error) {
	ext := strings.ToLower(filepath.Ext(path))
	for _, f := range Formats {
		if ext == f {
			return f, nil
		}
	}
	return ".json", nil
}

// KnownFormat reports whether a path's extension names one of Formats.
func KnownFormat(path string) bool {
	return slices.Contains(Formats, strings.ToLower(filepath.Ext(path)))
}

// Create opens an output file, its format chosen by extension. An existing
// file is an error wrapping ErrExists unless force is set; a path that
// names something other than a regular file (a device, a FIFO, a
// directory, or a symbolic link to one) is an error wrapping ErrNotRegular,
// force or not. JSONL is written in place, a line flushed per result; JSON
// and CSV are written to a temporary file beside path and renamed over it
// by Close, so a half-written file never carries the final name. Either
// way the file is new, mode 0644 less the umask, and a symbolic link is
// written through (see WriteFileAtomic). CSV cells that a spreadsheet would
// run as formulas are neutralised (see NewCSV); CreateWith can turn that
// off.
func Create(path string, force bool) (Writer, error) {
	return CreateWith(path, force, CSVOptions{})
}

// CreateWith is Create with the options of the CSV format (ignored for
// the other formats).
func CreateWith(path string, force bool, csvOpts CSVOptions) (Writer, error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	if err := CheckOutputFile(path); err != nil {
		return nil, err
	}
	if !force {
		if _, err := os.Stat(path); err == nil {
			return nil, fmt.Errorf("%s: %w (use --force to overwrite)", path, ErrExists)
		}
	}
	if format == ".jsonl" {
		f, err := createInPlace(path, force)
		if err != nil {
			return nil, err
		}
		return &fileWriter{Writer: NewJSONL(f), f: f}, nil
	}
	a, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	var w Writer
	if format == ".json" {
		w = NewJSON(a)
	} else {
		w = NewCSVWriter(a, csvOpts)
	}
	return &fileWriter{Writer: w, f: a.File, atomic: a}, nil
}

type fileWriter struct {
	Writer
	f      *os.File
	atomic *atomicFile // renamed over its target by Close; nil: written in place
}

// Encoder returns the writer's Encoder, when its format has one.
func (w *fileWriter) Encoder() (Encoder, bool) {
	e, ok := w.Writer.(Encoder)
	return e, ok
}

func (w *fileWriter) Close() error {
	err := w.Writer.Close()
	if w.atomic != nil {
		return w.atomic.commit(err)
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Encoder is implemented by writers whose encoding can be done apart from
// writing (by the runner's workers, in parallel) and whose flushes can be
// grouped: Write(r) is Append(Encode(r)) followed by Flush.
type Encoder interface {
	Encode(matrix.Result) ([]byte, error)
	Append([]byte) error // buffer an encoded result
	Flush() error        // write what is buffered
}

// NewJSONL writes one JSON object per line, flushing each.
func NewJSONL(w io.Writer) Writer { return &jsonlWriter{bw: bufio.NewWriterSize(w, 256<<10)} }

type jsonlWriter struct {
	bw *bufio.Writer
}

var _ Encoder = (*jsonlWriter)(nil)

// Encoder returns the writer itself: a run's workers encode its lines.
func (w *jsonlWriter) Encoder() (Encoder, bool) { return w, true }

func (w *jsonlWriter) Write(r matrix.Result) error {
	b, err := w.Encode(r)
	if err != nil {
		return err
	}
	if err := w.Append(b); err != nil {
		return err
	}
	return w.Flush()
}

// Encode returns the result's line, newline included.
// The encoding is matrix.Result.AppendJSON: json.Marshal's bytes without
// reflection or re-sorting maps per line.
func (w *jsonlWriter) Encode(r matrix.Result) ([]byte, error) {
	return append(r.AppendJSON(nil), '\n'), nil
}

// Append buffers one encoded line; the buffer is written when full, or by
// Flush.
func (w *jsonlWriter) Append(b []byte) error {
	_, err := w.bw.Write(b)
	return err
}

// Flush writes the buffered lines.
func (w *jsonlWriter) Flush() error { return w.bw.Flush() }

func (w *jsonlWriter) Close() error { return w.bw.Flush() }

// NewJSON writes a JSON array of results, as the Python pikit's save_json.
func NewJSON(w io.Writer) Writer { return &jsonWriter{bw: bufio.NewWriter(w)} }

type jsonWriter struct {
	bw *bufio.Writer
	n  int
}

func (w *jsonWriter) Write(r matrix.Result) error {
	b, err := json.MarshalIndent(r, "  ", "  ")
	if err != nil {
		return err
	}
	sep := ",\n  "
	if w.n == 0 {
		sep = "[\n  "
	}
	w.n++
	if _, err := w.bw.WriteString(sep); err != nil {
		return err
	}
	_, err = w.bw.Write(b)
	return err
}

func (w *jsonWriter) Close() error {
	end := "\n]\n"
	if w.n == 0 {
		end = "[]\n"
	}
	if _, err := w.bw.WriteString(end); err != nil {
		return err
	}
	return w.bw.Flush()
}

// CSVColumns are the columns of the CSV format (result.Columns): the
// Python pikit's flat columns first, then pikit's own. The trace is left
// out.
var CSVColumns = result.Columns()

// CSVOptions are the choices of the CSV writers.
type CSVOptions struct {
	// Raw writes every cell as it is. By default a cell a spreadsheet
	// would run as a formula is neutralised (see NeutralizeCSV): results
	// carry text from models and attack payloads, and a CSV file is often
	// opened in a spreadsheet. Raw is for files read only by programs.
	Raw bool
}

// NeutralizeCSV returns a CSV cell that a spreadsheet shows as text, never
// runs as a formula: a cell that begins with =, +, -, @, a tab or a
// carriage return, and is not a plain decimal number (-0.25, +3, 1e-3), is
// prefixed with a single quote ', as OWASP advises against CSV injection.
// Plain numbers (a negative rate, a seed) are left alone: a spreadsheet
// reads them as numbers, not formulas. Reading the file back does not take
// the quote off: ReadCSV returns cells as they are written.
func NeutralizeCSV(cell string) string {
	if cell == "" {
		return cell
	}
	switch cell[0] {
	case '=', '+', '-', '@', '\t', '\r':
		if !plainNumber(cell) {
			return "'" + cell
		}
	}
	return cell
}

// plainNumber reports whether s is [+-]digits[.digits][e[+-]digits].
func plainNumber(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	whole := digits()
	frac := 0
	if i < len(s) && s[i] == '.' {
		i++
		frac = digits()
	}
	if whole+frac == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// NewCSV writes one row per result under CSVColumns, each cell a
// spreadsheet would run as a formula neutralised (see NeutralizeCSV). It
// is NewCSVWriter with the default options.
func NewCSV(w io.Writer) Writer { return NewCSVWriter(w, CSVOptions{}) }

// NewCSVWriter writes one row per result under CSVColumns, with options.
func NewCSVWriter(w io.Writer, o CSVOptions) Writer {
	return &csvWriter{cw: csv.NewWriter(w), raw: o.Raw}
}

type csvWriter struct {
	cw     *csv.Writer
	raw    bool
	header bool
	row    []string
}

func (w *csvWriter) Write(r matrix.Result) error {
	if !w.header {
		w.header = true
		if err := w.cw.Write(CSVColumns); err != nil {
			return err
		}
	}
	var err error
	if w.row, err = r.AppendCSV(w.row[:0]); err != nil {
		return err
	}
	if !w.raw {
		for i, c := range w.row {
			w.row[i] = NeutralizeCSV(c)
		}
	}
	return w.cw.Write(w.row)
}

func (w *csvWriter) Close() error {
	if !w.header {
		w.header = true
		if err := w.cw.Write(CSVColumns); err != nil {
			return err
		}
	}
	w.cw.Flush()
	return w.cw.Error()
}
