package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// scanAll scans text and returns copies of its records.
func scanAll(t *testing.T, name, format, text string) ([]Record, error) {
	t.Helper()
	var out []Record
	err := Scan(strings.NewReader(text), name, format, func(r *Record) error {
		c := *r
		c.raw, c.full = nil, nil
		if r.Utility != nil {
			c.SetUtility(*r.Utility)
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// TestScanNotResults: files that are not pikit results are errors wrapping
// ErrNotResults that name the file, the line and what was expected.
func TestScanNotResults(t *testing.T) {
	ok := `{"key":"k1","attack":"naive","outcome":"refused","success":false}`
	tests := []struct {
		name, format, text string
		want               []string // in the error
	}{
		{"object without pikit fields", ".jsonl", `{"foo":1}` + "\n", []string{"f:1:", `"outcome" or "success"`}},
		{"verdict but nothing naming the cell", ".jsonl", `{"outcome":"refused","success":false}`, []string{"f:1:", `"attack", "agent", "key"`}},
		{"names but no verdict", ".jsonl", `{"attack":"naive","key":"k"}`, []string{"f:1:"}},
		{"array line", ".jsonl", "[1,2]\n", []string{"f:1:", `got "[1,2]"`}},
		{"number line", ".jsonl", ok + "\n42\n", []string{"f:2:"}},
		{"bad third line", ".jsonl", ok + "\n\n{\"attack\":\n", []string{"f:3:", "invalid JSON"}},
		{"trailing junk", ".jsonl", ok + " x\n", []string{"f:1:", "invalid JSON"}},
		{"success of the wrong type", ".jsonl", `{"attack":"a","success":"yes"}`, []string{"f:1:", `field "success": want true or false`}},
		{"outcome of the wrong type", ".jsonl", `{"attack":"a","outcome":3}`, []string{"f:1:", `field "outcome": want a string`}},
		{"repeat index not an integer", ".jsonl", `{"attack":"a","outcome":"refused","repeat_index":1.5}`, []string{"f:1:", `"repeat_index": want an integer`}},
		{"truncated line", ".jsonl", ok + "\n" + ok[:30], []string{"f:2:"}},
		{"JSON array of other objects", ".json", "[\n  {\"a\": 1}\n]\n", []string{"f:2:", `"outcome" or "success"`}},
		{"JSON array, second element bad", ".json", "[\n" + ok + ",\n\n  {\"name\": \"x\"}\n]", []string{"f:4:"}},
		{"JSON object, not an array", ".json", ok, []string{"f:1:", "want a JSON array of results"}},
		{"JSON array not closed", ".json", "[\n" + ok + ",\n" + ok + "\n", []string{"f:4:", "not closed"}},
		{"JSON array element cut", ".json", "[\n" + ok + ",\n" + ok[:20], []string{"f:3:", "ends inside it"}},
		{"JSON array of numbers", ".json", "[1, 2]", []string{"f:1:"}},
		{"JSON after the array", ".json", "[" + ok + "] [", []string{"f:1:", "more after the array"}},
		{"CSV without pikit columns", ".csv", "name,value\nx,1\n", []string{"f:1:", `"outcome" or "success" column`, `got "name,value"`}},
		{"CSV with outcome but nothing naming the cell", ".csv", "outcome,value\nrefused,1\n", []string{"f:1:"}},
		{"CSV with a broken row", ".csv", "attack,outcome\nnaive,\"refused\nx,y\n", []string{"f:2:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scanAll(t, "f", tt.format, tt.text)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrNotResults) {
				t.Errorf("%v does not wrap ErrNotResults", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestScanAccepts: what reads as results, and the lines records name.
func TestScanAccepts(t *testing.T) {
	a := `{"key":"k1","attack":"naive","outcome":"refused","success":false}`
	b := `{"key":"k2","attack":"combined","outcome":"full_success","success":true}`
	tests := []struct {
		name, format, text string
		lines              []int
	}{
		{"empty JSONL", ".jsonl", "", nil},
		{"blank JSONL", ".jsonl", "\n  \n", nil},
		{"empty JSON", ".json", " \n", nil},
		{"empty JSON array", ".json", "[]", nil},
		{"empty CSV", ".csv", "", nil},
		{"CSV header only", ".csv", "attack,success\n", nil},
		{"JSONL with blank lines, CRLF and no final newline", ".jsonl", a + "\r\n\r\n" + b, []int{1, 3}},
		{"indented JSON array", ".json", "[\n  " + a + ",\n\n  " + b + "\n]\n", []int{2, 4}},
		{"one-line JSON array", ".json", "[" + a + "," + b + "]", []int{1, 1}},
		{"Python result without outcome", ".jsonl", `{"attack":"naive","success":true,"trace":"Trace(steps=2)"}`, []int{1}},
		{"agent names the cell", ".jsonl", `{"agent":"chat","outcome":"refused"}`, []int{1}},
		// null is none for the fields beside the verdict (a null outcome
		// or success is an error: TestScanRejectsBadVerdicts).
		{"nulls", ".jsonl", `{"key":"k","attack":null,"outcome":"refused","success":false,"utility":null,"method_specs":null,"repeat_index":null}`, []int{1}},
		{"CSV", ".csv", "key,attack,outcome\nk1,naive,refused\nk2,\"multi\nline\",refused\nk3,x,refused\n", []int{2, 3, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := scanAll(t, "f", tt.format, tt.text)
			if err != nil {
				t.Fatal(err)
			}
			var lines []int
			for _, r := range recs {
				lines = append(lines, r.Line)
			}
			if !reflect.DeepEqual(lines, tt.lines) {
				t.Errorf("lines %v, want %v", lines, tt.lines)
			}
		})
	}
}

// TestScanMatchesFullDecode: a Record holds what decoding the whole result
// gives, for results pikit writes in every format, for escaped and
// invalid text, and for a JSON array split over many reads.
func TestScanMatchesFullDecode(t *testing.T) {
	res := sampleResults(t)
	yes := true
	res[0].Utility = &yes
	res[1].Attack = "quote \" back\\slash \u00e9 \x1b[2J \u202e"
	res[1].Error = "an error"
	res[2].CaseID = "case\nwith newline"
	res[3].MethodSpecs = map[string]matrix.Spec{"attack": {Name: "format_confusion", Kwargs: map[string]any{"template": "tool", "n": 2}}}
	for _, format := range []string{".jsonl", ".json", ".csv"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			var w Writer
			switch format {
			case ".jsonl":
				w = NewJSONL(&buf)
			case ".json":
				w = NewJSON(&buf)
			default:
				w = NewCSVWriter(&buf, CSVOptions{Raw: true})
			}
			for _, r := range res {
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			i := 0
			err := Scan(iotest{r: bytes.NewReader(buf.Bytes())}, "f", format, func(rec *Record) error {
				full, err := rec.Result()
				if err != nil {
					return err
				}
				want := RecordOf(&full)
				got := *rec
				for _, r := range []*Record{&got, &want} {
					r.raw, r.MetadataText, r.full, r.Line, r.file = nil, nil, nil, 0, ""
					if r.Utility != nil {
						r.SetUtility(*r.Utility)
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("result %d: record\n%+v\nwant\n%+v", i, got, want)
				}
				if full.Key != res[i].Key || full.Attack != res[i].Attack || full.CaseID != res[i].CaseID {
					t.Errorf("result %d: decoded %q %q %q", i, full.Key, full.Attack, full.CaseID)
				}
				i++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if i != len(res) {
				t.Errorf("%d records, want %d", i, len(res))
			}
		})
	}
	// Invalid UTF-8 in a field reads as encoding/json reads it.
	recs, err := scanAll(t, "f", ".jsonl", "{\"attack\":\"bad \xff byte\",\"outcome\":\"refused\"}")
	if err != nil || recs[0].Attack != "bad \ufffd byte" {
		t.Errorf("invalid UTF-8: %q, %v", recs[0].Attack, err)
	}
}

// iotest hands out at most 7 bytes per read, so values span reads.
type iotest struct{ r *bytes.Reader }

func (t iotest) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	return t.r.Read(p)
}

func TestComparerPairsByIdentity(t *testing.T) {
	spec := func(n int) map[string]matrix.Spec {
		return map[string]matrix.Spec{"attack": {Name: "naive", Kwargs: map[string]any{"n": n}}}
	}
	// The new run used another target: keys differ, so cells pair by what
	// they tried, method options and repeat included.
	base := []matrix.Result{
		{Key: "b1", Attack: "naive", Agent: "chat", Outcome: judge.FullSuccess, Success: true, MethodSpecs: spec(1)},
		{Key: "b2", Attack: "naive", Agent: "chat", Outcome: judge.FullSuccess, Success: true, MethodSpecs: spec(2)},
		{Key: "b3", Attack: "naive", Agent: "chat", Outcome: judge.FullSuccess, Success: true, MethodSpecs: spec(2), RepeatIndex: 1},
	}
	next := []matrix.Result{
		{Key: "n2", Attack: "naive", Agent: "chat", Outcome: judge.Refused, MethodSpecs: spec(2)},
		{Key: "n9", Attack: "naive", Agent: "chat", Outcome: judge.Refused, MethodSpecs: spec(3)},
	}
	c := Compare(base, next)
	if len(c.Flips) != 1 || c.Flips[0].Key != "n2" || c.OnlyBase != 2 || c.OnlyNew != 1 {
		t.Errorf("flips %+v, only base %d, only new %d", c.Flips, c.OnlyBase, c.OnlyNew)
	}
	// pikit's hex keys pair as numbers; other keys as strings.
	hex := []matrix.Result{
		{Key: "00000000000000ff", Attack: "a", Outcome: judge.FullSuccess, Success: true},
		{Key: "00000000000000FF", Attack: "b", Outcome: judge.FullSuccess, Success: true},
	}
	flipped := []matrix.Result{
		{Key: "00000000000000FF", Attack: "b", Outcome: judge.Refused},
		{Key: "00000000000000ff", Attack: "a", Outcome: judge.Refused},
	}
	if c := Compare(hex, flipped); len(c.Flips) != 2 || c.OnlyBase != 0 || c.OnlyNew != 0 {
		t.Errorf("hex keys: %+v", c)
	}
	// Streamed from JSONL, the same.
	var b1, b2 bytes.Buffer
	for _, p := range []struct {
		res []matrix.Result
		buf *bytes.Buffer
	}{{base, &b1}, {next, &b2}} {
		w := NewJSONL(p.buf)
		for _, r := range p.res {
			w.Write(r)
		}
		w.Close()
	}
	cmp := NewComparer("attack", "defense")
	if err := Scan(&b1, "base", ".jsonl", func(r *Record) error { cmp.AddBase(r); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := Scan(&b2, "new", ".jsonl", func(r *Record) error { cmp.AddNew(r); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := cmp.Comparison(); !reflect.DeepEqual(got.Flips, c.Flips) || got.OnlyBase != 2 || got.OnlyNew != 1 {
		t.Errorf("streamed: %+v", got)
	}
}

// FuzzScan: no input makes a reader panic, and what a JSONL line yields
// decodes whole.
func FuzzScan(f *testing.F) {
	f.Add([]byte(`{"key":"k","attack":"a","outcome":"refused","success":false,"repeat_index":2,"method_specs":{"attack":{"name":"x"}},"utility":true}`))
	f.Add([]byte("[\n{\"attack\":\"a\",\"success\":true}\n]"))
	f.Add([]byte("attack,success\na,true\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, format := range []string{".jsonl", ".json", ".csv"} {
			Scan(bytes.NewReader(b), "f", format, func(r *Record) error {
				if format != ".csv" {
					if _, err := r.Result(); err != nil && json.Valid(r.raw) {
						var v map[string]any
						if json.Unmarshal(r.raw, &v) == nil {
							t.Logf("%s: record but no result: %v", format, err)
						}
					}
				}
				return nil
			})
		}
	})
}

// TestComparisonWriteJSON: the streamed JSON decodes to the comparison.
func TestComparisonWriteJSON(t *testing.T) {
	base, next := goldenResults(), goldenResults()
	for i := range next {
		next[i].Success = !next[i].Success
	}
	for _, c := range []Comparison{Compare(base, next, "defense"), Compare(base, base), Compare(nil, nil)} {
		var buf bytes.Buffer
		if err := c.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		var got, want any
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, buf.String())
		}
		b, _ := json.Marshal(c)
		json.Unmarshal(b, &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("WriteJSON:\n%s\nwant\n%s", buf.String(), b)
		}
	}
}

// TestScanSkipping: the JSONL reader goes on past lines that are not
// results, telling skip which and why; an error from skip stops it.
func TestScanSkipping(t *testing.T) {
	const good = `{"key":"k","attack":"naive","outcome":"refused","success":false}`
	in := good + "\n{not json\n" + `{"attack":"x"}` + "\n\n" + good + "\n"
	var lines []int
	var whys []string
	var got []int
	err := ScanSkipping(strings.NewReader(in), "f.jsonl", ".jsonl", func(r *Record) error {
		got = append(got, r.Line)
		return nil
	}, func(line int, why string) error {
		lines, whys = append(lines, line), append(whys, why)
		return nil
	})
	if err != nil || !reflect.DeepEqual(got, []int{1, 5}) || !reflect.DeepEqual(lines, []int{2, 3}) {
		t.Fatalf("%v: results at %v, skipped %v", err, got, lines)
	}
	if !strings.HasPrefix(whys[0], "not a result: invalid JSON") || strings.Contains(whys[0], "f.jsonl") || !strings.Contains(whys[1], "want a JSON object") {
		t.Errorf("why %q", whys)
	}
	stop := errors.New("stop")
	err = ScanSkipping(strings.NewReader(in), "f.jsonl", ".jsonl", func(*Record) error { return nil }, func(int, string) error { return stop })
	if err != stop {
		t.Errorf("skip's error: %v", err)
	}
	if err := Scan(strings.NewReader(in), "f.jsonl", ".jsonl", func(*Record) error { return nil }); !errors.Is(err, ErrNotResults) || !strings.Contains(err.Error(), "f.jsonl:2:") {
		t.Errorf("Scan past a bad line: %v", err)
	}
}

// TestScanSkippingLongLine: a line past the reader's bound is passed over
// whole, and the next line read.
func TestScanSkippingLongLine(t *testing.T) {
	const good = `{"key":"k","attack":"naive","outcome":"refused","success":false}`
	in := io.MultiReader(strings.NewReader(`{"reason":"`), io.LimitReader(letters{}, maxLine+2<<20), strings.NewReader("\"}\n"+good+"\n"))
	var skipped []string
	var got []int
	err := ScanSkipping(in, "f.jsonl", ".jsonl", func(r *Record) error { got = append(got, r.Line); return nil },
		func(line int, why string) error { skipped = append(skipped, fmt.Sprint(line, " ", why)); return nil })
	if err != nil || !reflect.DeepEqual(got, []int{2}) || len(skipped) != 1 || !strings.Contains(skipped[0], "1 line longer than 64 MiB") {
		t.Fatalf("%v: results at %v, skipped %q", err, got, skipped)
	}
}

// letters reads as an endless run of the letter a.
type letters struct{}

func (letters) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}
