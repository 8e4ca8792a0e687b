package report

import (
	"io"
	"strings"

	"github.com/pikit-go/pikit/matrix"
)

// ReadJSONL decodes results one line at a time, calling fn for each; blank
// lines are skipped. A line that is not a result is an error wrapping
// ErrNotResults that names its number (see Scan).
func ReadJSONL(r io.Reader, fn func(matrix.Result) error) error {
	return Scan(r, "", ".jsonl", func(rec *Record) error {
		res, err := rec.Result()
		if err != nil {
			return dataErrorf("", rec.Line, err, "not a result")
		}
		return fn(res)
	})
}

// ReadJSON decodes a JSON array of results (pikit's .json files and the
// Python pikit's save_json).
func ReadJSON(r io.Reader) ([]matrix.Result, error) {
	return readAll(r, ".json")
}

// ReadCSV decodes results from CSV, by header names: pikit's columns or the
// Python pikit's. Cells are read as they are: a formula neutralised by
// NewCSV keeps its leading quote.
func ReadCSV(r io.Reader) ([]matrix.Result, error) {
	return readAll(r, ".csv")
}

// ReadFile reads a whole results file of any supported format ("-" is
// stdin, read as JSONL). It holds every result in memory: to summarise a
// large file, use ScanFile.
func ReadFile(path string) ([]matrix.Result, error) {
	var out []matrix.Result
	err := ScanFile(path, func(rec *Record) error {
		res, err := rec.Result()
		if err != nil {
			return dataErrorf(path, rec.Line, err, "not a result")
		}
		out = append(out, res)
		return nil
	})
	return out, err
}

func readAll(r io.Reader, format string) ([]matrix.Result, error) {
	var out []matrix.Result
	err := Scan(r, "", format, func(rec *Record) error {
		res, err := rec.Result()
		if err != nil {
			return dataErrorf("", rec.Line, err, "not a result")
		}
		out = append(out, res)
		return nil
	})
	return out, err
}

// normalize fills in what older files (the Python pikit's) carry
// differently: a dataset case id only as a "[id] " prefix of the reason.
func normalize(r *matrix.Result) {
	if r.CaseID == "" {
		r.CaseID = caseFromReason(r.Reason)
	}
}

// caseFromReason returns the id of a reason of the form "[id] …", or "".
func caseFromReason(reason string) string {
	if strings.HasPrefix(reason, "[") {
		if end := strings.Index(reason, "] "); end > 1 && !strings.ContainsAny(reason[1:end], " \t") {
			return reason[1:end]
		}
	}
	return ""
}
