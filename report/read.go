package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// maxLine bounds one JSONL line (a result with a long trace).
const maxLine = 64 << 20

// ReadJSONL decodes results one line at a time, calling fn for each; blank
// lines are skipped. A bad line is an error naming its number.
func ReadJSONL(r io.Reader, fn func(matrix.Result) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var res matrix.Result
		if err := json.Unmarshal(line, &res); err != nil {
			return fmt.Errorf("line %d: not a result: %w", n, err)
		}
		if err := fn(res); err != nil {
			return err
		}
	}
	return sc.Err()
}

// ReadJSON decodes a JSON array of results (the Python pikit's save_json).
func ReadJSON(r io.Reader) ([]matrix.Result, error) {
	var out []matrix.Result
	if err := json.NewDecoder(r).Decode(&out); err != nil {
		return nil, fmt.Errorf("not a JSON array of results: %w", err)
	}
	return out, nil
}

// ReadCSV decodes results from CSV, by header names: pikit's columns or the
// Python pikit's.
func ReadCSV(r io.Reader) ([]matrix.Result, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("CSV header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	var out []matrix.Result
	for row := 2; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("CSV row %d: %w", row, err)
		}
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return rec[i]
			}
			return ""
		}
		atoi := func(name string) int { n, _ := strconv.Atoi(get(name)); return n }
		res := matrix.Result{
			Attack: get("attack"), Defense: get("defense"), Channel: get("channel"), Agent: get("agent"),
			Target: get("target"), Confidence: get("confidence"), Reason: get("reason"),
			FinalText: get("final_text"), Timestamp: get("timestamp"), Key: get("key"),
			Outcome: judge.Outcome(get("outcome")), CaseID: get("case_id"), CaseDescription: get("case_description"),
			Task: get("task"), RunID: get("run_id"), Error: get("error"), RepeatIndex: atoi("repeat_index"),
		}
		res.Success, _ = strconv.ParseBool(get("success"))
		res.SinkFired, _ = strconv.ParseBool(get("sink_fired"))
		res.Seed, _ = strconv.ParseInt(get("seed"), 10, 64)
		res.LatencyMS, _ = strconv.ParseInt(get("latency_ms"), 10, 64)
		res.Usage.PromptTokens, res.Usage.CompletionTokens = atoi("prompt_tokens"), atoi("completion_tokens")
		if s := get("signals"); s != "" {
			res.Signals = strings.Split(s, ";")
		}
		out = append(out, res)
	}
}

// ReadFile reads a results file of any supported format ("-" is stdin,
// read as JSONL).
func ReadFile(path string) ([]matrix.Result, error) {
	var r io.Reader = os.Stdin
	format := ".jsonl"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
		if format, err = FormatOf(path); err != nil {
			return nil, err
		}
	}
	var out []matrix.Result
	var err error
	switch format {
	case ".jsonl":
		err = ReadJSONL(r, func(res matrix.Result) error { out = append(out, res); return nil })
	case ".json":
		out, err = ReadJSON(r)
	default:
		out, err = ReadCSV(r)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range out {
		normalize(&out[i])
	}
	return out, nil
}

// normalize fills in what older files (the Python pikit's) carry
// differently: a dataset case id only as a "[id] " prefix of the reason.
func normalize(r *matrix.Result) {
	if r.CaseID == "" && strings.HasPrefix(r.Reason, "[") {
		if end := strings.Index(r.Reason, "] "); end > 1 && !strings.ContainsAny(r.Reason[1:end], " \t") {
			r.CaseID = r.Reason[1:end]
		}
	}
}
