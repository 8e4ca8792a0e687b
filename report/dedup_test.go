package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func source(name, text string) Source {
	return Source{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(text)), nil }}
}

func line(key, outcome string) string {
	return fmt.Sprintf(`{"key":%q,"attack":"naive","outcome":%q}`, key, outcome) + "\n"
}

func TestDedup(t *testing.T) {
	a := line("k1", "runtime_error") + line("k2", "refused") + line("k3", "runtime_error")
	b := line("k1", "full_success") + line("k2", "full_success") + line("k3", "runtime_error") + "\n" + line("k4", "refused")
	var out bytes.Buffer
	st, err := Dedup([]Source{source("a", a), source("b", b)}, &out)
	if err != nil {
		t.Fatal(err)
	}
	// k1: the rerun's success beats the earlier error; k2: the first
	// good result; k3: errors only, the first kept; k4 once.
	want := line("k2", "refused") + line("k3", "runtime_error") + line("k1", "full_success") + line("k4", "refused")
	if out.String() != want {
		t.Errorf("Dedup wrote\n%s\nwant\n%s", out.String(), want)
	}
	if st != (DedupStats{Kept: 4, Duplicates: 3, Errors: 1}) {
		t.Errorf("stats %+v", st)
	}
	_, err = Dedup([]Source{source("a", a), source("cut.jsonl", `{"key":"k9","outc`)}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "cut.jsonl: the last line is incomplete") {
		t.Errorf("a half-written line: %v", err)
	}
	_, err = Dedup([]Source{source("bad.jsonl", "[1,2]\n")}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl: line 1") {
		t.Errorf("a line that is not a result: %v", err)
	}
}

func TestScanKeysBoundsALine(t *testing.T) {
	huge := io.MultiReader(strings.NewReader(line("k1", "refused")+`{"key":"k2","x":"`), endless{})
	_, err := ScanKeys(huge, func(LineInfo) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 2: longer than 64 MiB") {
		t.Errorf("an endless line: %v", err)
	}
}

// endless reads as an endless run of 'a'.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestDeduperCheck: with Check, a line that is not a good result (a
// verdict that disagrees, an unknown outcome) is refused, naming its
// source and line.
func TestDeduperCheck(t *testing.T) {
	for _, bad := range []string{
		`{"key":"k2","attack":"naive","outcome":"refused","success":true}`,
		`{"key":"k2","attack":"naive","outcome":"pwned"}`,
	} {
		d := NewDeduper()
		d.Check = true
		err := d.Scan([]Source{source("bad.jsonl", line("k1", "refused")+bad+"\n")})
		if err == nil || !strings.Contains(err.Error(), "bad.jsonl:2: not a result") || !errors.Is(err, ErrNotResults) {
			t.Errorf("%s: %v", bad, err)
		}
		// Without Check, only the keys are read (objstore's shards).
		if err := NewDeduper().Scan([]Source{source("bad.jsonl", bad+"\n")}); err != nil {
			t.Errorf("unchecked: %v", err)
		}
	}
}
