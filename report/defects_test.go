package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/result"
)

// Tests of issue 21, "Defects met on the same runs".

// An older result line: no judged_against, attempts or retries.
const oldLine = `{"key":"k-old","attack":"naive","defense":"none","channel":"","agent":"chat","target":"mock","task":"say X","success":true,"confidence":"high","reason":"r","signals":[],"final_text":"X","sink_fired":false,"outcome":"full_success","repeat_index":0,"latency_ms":12,"usage":{"prompt_tokens":1,"completion_tokens":1}}`

// newResult is a result as this version writes it.
func newResult() matrix.Result {
	return matrix.Result{
		Key: "k-new", Attack: "naive", Defense: "none", Agent: "email", Target: "openai:m", Task: "send it",
		Outcome: judge.SinkArgsMismatch, Confidence: "medium", Signals: []string{}, LatencyMS: 2400, ModelLatencyMS: 900,
		Attempts: 3, Retries: 2,
		JudgedAgainst: &matrix.JudgedAgainst{Task: "send it", Payload: "please send it", Canary: "", SinkArgs: map[string]string{"to": "a@evil.example"}, RequireSink: true},
	}
}

// TestReadWithAndWithoutJudgedAgainst: every reader takes results files
// with judged_against, attempts and retries and files written before
// them, and gives back what each holds.
func TestReadWithAndWithoutJudgedAgainst(t *testing.T) {
	nr := newResult()
	newLine := nr.AppendJSON(nil)
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "mixed.jsonl")
	if err := os.WriteFile(jsonl, []byte(oldLine+"\n"+string(newLine)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	array := filepath.Join(dir, "mixed.json")
	if err := os.WriteFile(array, []byte("[\n"+oldLine+",\n"+string(newLine)+"\n]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{jsonl, array} {
		res, err := ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(res) != 2 || res[0].JudgedAgainst != nil || res[0].Attempts != 0 {
			t.Fatalf("%s: the old result reads as %+v", path, res[0])
		}
		ja := res[1].JudgedAgainst
		if ja == nil || ja.Task != "send it" || ja.Payload != "please send it" || ja.SinkArgs["to"] != "a@evil.example" || !ja.RequireSink {
			t.Errorf("%s: judged_against reads as %+v", path, ja)
		}
		if res[1].Attempts != 3 || res[1].Retries != 2 || res[1].ModelLatencyMS != 900 {
			t.Errorf("%s: attempts %d, retries %d, model latency %d", path, res[1].Attempts, res[1].Retries, res[1].ModelLatencyMS)
		}
		var recs []Record
		if err := ScanFile(path, func(r *Record) error {
			recs = append(recs, Record{Brief: result.Brief{Key: r.Key, Attempts: r.Attempts, Retries: r.Retries}})
			return nil
		}); err != nil {
			t.Fatalf("%s: scan: %v", path, err)
		}
		if len(recs) != 2 || recs[0].Retries != 0 || recs[1].Attempts != 3 || recs[1].Retries != 2 {
			t.Errorf("%s: records %+v", path, recs)
		}
	}
	// A CSV with the counts as columns reads them too.
	csv := "key,attack,agent,outcome,success,attempts,retries,model_latency_ms\nk,naive,chat,refused,false,4,1,300\n"
	res, err := ReadCSV(strings.NewReader(csv))
	if err != nil || len(res) != 1 || res[0].Attempts != 4 || res[0].Retries != 1 || res[0].ModelLatencyMS != 300 {
		t.Errorf("CSV: %v %+v", err, res)
	}
	// A result line whose counts are not integers is refused by line.
	bad := strings.Replace(string(newLine), `"retries":2`, `"retries":"two"`, 1)
	err = Scan(strings.NewReader(bad), "bad.jsonl", ".jsonl", func(*Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), `"retries"`) {
		t.Errorf("retries as a string: %v", err)
	}
}

// TestSummaryRetries: the summary adds up attempts and retries and says
// so in its text, only when some request was retried.
func TestSummaryRetries(t *testing.T) {
	old := matrix.Result{}
	if err := json.Unmarshal([]byte(oldLine), &old); err != nil {
		t.Fatal(err)
	}
	s := Summarize([]matrix.Result{old, newResult(), newResult()})
	if s.Attempts != 6 || s.Retries != 4 {
		t.Fatalf("attempts %d, retries %d", s.Attempts, s.Retries)
	}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "4 of the 6 model requests were retries") {
		t.Errorf("the summary does not say what was retried:\n%s", b.String())
	}
	b.Reset()
	if err := Summarize([]matrix.Result{old}).WriteText(&b); err != nil || strings.Contains(b.String(), "retries") {
		t.Errorf("a summary without retries mentions them: %v\n%s", err, b.String())
	}
	j, _ := json.Marshal(s)
	if !bytes.Contains(j, []byte(`"retries":4`)) {
		t.Errorf("the JSON summary lacks retries: %s", j)
	}
}
