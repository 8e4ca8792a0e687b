package report

import (
	"fmt"
	"strings"
	"testing"
)

// TestRecordDedup: one pass, each key once: a result handed on at once, a
// runtime error held until Flush and dropped when a rerun's result
// follows; keyless records (the Python pikit's) all handed on.
func TestRecordDedup(t *testing.T) {
	const hexA, hexB = "00000000000000aa", "00000000000000bb"
	text := line(hexA, "runtime_error") + // held, then beaten by its rerun
		line("k2", "refused") +
		line(hexA, "runtime_error") + // a second error of a held key
		line("k2", "full_success") + // after a result: passed over
		line(hexB, "runtime_error") + // errors only: handed on at the end
		line(hexA, "full_success") +
		line(hexB, "runtime_error") +
		`{"attack":"naive","success":true}` + "\n" + `{"attack":"naive","success":true}` + "\n" +
		line(hexA, "refused")
	var got []string
	d := NewRecordDedup(func(r *Record) error {
		res, err := r.Result() // the whole result, read after the scan moved on for a held one
		if err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("%s:%s:%d", r.Key, res.Outcome, r.Line))
		return nil
	})
	d.KeepText = true
	if err := Scan(strings.NewReader(text), "r.jsonl", ".jsonl", d.Add); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	want := []string{"k2:refused:2", hexA + ":full_success:6", "::8", "::9", hexB + ":runtime_error:5"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("handed on %v\nwant       %v", got, want)
	}
	if d.Duplicates() != 5 {
		t.Errorf("%d duplicates, want 5", d.Duplicates())
	}
}

// TestRecordDedupHeldRecordIsItsOwn: a held runtime error keeps its own
// fields when the reader reuses its buffers for the lines after it: with
// KeepText the whole record and its result; without, what summaries read
// of a failed cell (its result is then an error).
func TestRecordDedupHeldRecordIsItsOwn(t *testing.T) {
	const failed = `{"key":"k1","attack":"adaptive","defense":"d1","channel":"c1","agent":"a1","target":"t1","case_id":"x1","outcome":"runtime_error","success":false,` +
		`"utility":true,"repeat_index":3,"attempts":4,"retries":2,"method_specs":{"attack":{"name":"adaptive","kwargs":{"s":1}}},` +
		`"metadata":{"benchmark":"b1","labels":{"kind":"ds"},"adaptive":{"strategy":"pair"}}}`
	const next = `{"key":"k2","attack":"other","defense":"d2","channel":"c2","agent":"a2","target":"t2","case_id":"x2","outcome":"refused","success":false,` +
		`"utility":false,"repeat_index":1,"attempts":1,"retries":0,"method_specs":{"attack":{"name":"other","kwargs":{}}},` +
		`"metadata":{"benchmark":"b2","labels":{"kind":"dh"},"adaptive":{"strategy":"tree"}}}`
	const csvText = "key,attack,defense,outcome,success,error,repeat_index\nk1,adaptive,d1,runtime_error,false,timeout,3\nk2,other,d2,refused,false,,1\n"
	for _, tc := range []struct {
		format, text string
		keepText     bool
		line         int
	}{{".jsonl", failed + "\n" + next + "\n", true, 1}, {".jsonl", failed + "\n" + next + "\n", false, 1}, {".csv", csvText, true, 2}, {".csv", csvText, false, 2}} {
		name := fmt.Sprintf("%s KeepText=%v", tc.format, tc.keepText)
		var held *Record
		d := NewRecordDedup(func(r *Record) error {
			if r.Key == "k1" {
				c := *r
				held = &c
			}
			return nil
		})
		d.KeepText = tc.keepText
		if err := Scan(strings.NewReader(tc.text), "r"+tc.format, tc.format, d.Add); err != nil {
			t.Fatal(err)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		if held == nil || held.Attack != "adaptive" || held.Defense != "d1" || held.RepeatIndex != 3 || held.Line != tc.line || held.file != "r"+tc.format {
			t.Fatalf("%s: held record changed: %+v", name, held)
		}
		if tc.format == ".jsonl" {
			if held.Channel != "c1" || held.Agent != "a1" || held.Target != "t1" || held.CaseID != "x1" || held.Benchmark != "b1" ||
				held.Labels["kind"] != "ds" || held.Attempts != 4 || held.Retries != 2 || !strings.Contains(held.MethodSpecs, `"s":1`) ||
				!strings.Contains(string(held.MetadataText), "pair") {
				t.Errorf("%s: held record's fields changed: %+v", name, held)
			}
			if tc.keepText && (held.Utility == nil || !*held.Utility) {
				t.Errorf("%s: held record's utility changed", name)
			}
		}
		res, err := held.Result()
		switch {
		case tc.keepText && (err != nil || res.Attack != "adaptive" || res.RepeatIndex != 3):
			t.Errorf("%s: held record's result: %+v, %v", name, res, err)
		case !tc.keepText && err == nil:
			t.Errorf("%s: a record held without its text decoded a result: %+v", name, res)
		}
	}
}
