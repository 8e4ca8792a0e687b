package report

import (
	"fmt"
	"strings"
	"testing"
)

// pythonRepeats is a results file as the Python pikit writes a run with
// repeats = 3 over two combinations: three rows each, then a summary row
// (signals ["repeat_summary"], success_count of total_runs, the default
// outcome). Its own report counts 6 runs, 4 successes.
func pythonRepeats(format string) string {
	type row struct {
		attack  string
		rep     int
		success bool
		summary bool
		count   int
	}
	rows := []row{
		{"naive", 0, true, false, 0}, {"naive", 1, false, false, 0}, {"naive", 2, true, false, 0}, {"naive", 0, true, true, 2},
		{"escape", 0, true, false, 0}, {"escape", 1, true, false, 0}, {"escape", 2, false, false, 0}, {"escape", 0, true, true, 2},
	}
	var b strings.Builder
	if format == ".csv" {
		b.WriteString("attack,defense,channel,agent,target,success,confidence,sink_fired,reason,signals,final_text,timestamp,repeat_index,success_count,total_runs,outcome,model_complied,runtime_blocked\n")
		for _, r := range rows {
			sig, outcome, reason := "marker_terse", "full_success", "ok"
			if r.summary {
				sig, outcome, reason = "repeat_summary", "not_reached", fmt.Sprintf("%d/3 runs succeeded", r.count)
			} else if !r.success {
				sig, outcome = "refusal", "refused"
			}
			fmt.Fprintf(&b, "%s,none,,chat,mock,%s,high,False,%s,%s,HACKED,2026-11-30T10:00:00,%d,%d,3,%s,,False\n",
				r.attack, map[bool]string{true: "True", false: "False"}[r.success], reason, sig, r.rep, r.count, outcome)
		}
		return b.String()
	}
	b.WriteString("[")
	for i, r := range rows {
		if i > 0 {
			b.WriteString(",")
		}
		sig, outcome := `["marker_terse"]`, "full_success"
		if r.summary {
			sig, outcome = `["repeat_summary"]`, "not_reached"
		} else if !r.success {
			sig, outcome = `["refusal"]`, "refused"
		}
		fmt.Fprintf(&b, `{"attack":%q,"defense":"none","channel":"","agent":"chat","target":"mock","success":%v,"signals":%s,"repeat_index":%d,"success_count":%d,"total_runs":3,"outcome":%q,"trace":"","metadata":{"schema_version":"pikit.experiment-result.v1"}}`,
			r.attack, r.success, sig, r.rep, r.count, outcome)
	}
	b.WriteString("]")
	return b.String()
}

// TestRepeatSummaryRowsAreNotCells (issue 23): a repeat-summary row is
// passed over, in JSON and in CSV: 6 cells, 4 successes, as the Python
// pikit's report says (not 8 and 6).
func TestRepeatSummaryRowsAreNotCells(t *testing.T) {
	for _, format := range []string{".json", ".csv", ".jsonl"} {
		text := pythonRepeats(format)
		if format == ".jsonl" {
			text = strings.ReplaceAll(strings.Trim(pythonRepeats(".json"), "[]"), "},{", "}\n{")
		}
		res, err := readAll(strings.NewReader(text), format)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		wins := 0
		for _, r := range res {
			if r.Success {
				wins++
			}
		}
		if len(res) != 6 || wins != 4 {
			t.Errorf("%s: %d cells, %d successes; want 6 and 4", format, len(res), wins)
		}
	}
}
