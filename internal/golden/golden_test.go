package golden

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	for _, tc := range []struct{ got, want, has string }{
		{"a\nb\n", "a\nb\n", ""},
		{"a\nx\nc", "a\nb\nc", "line 2:"},
		{"a", "a\nb", "line 2: got ends"},
		{"a\nb", "a", "line 2: got \"b\", want ends"},
	} {
		d := Diff([]byte(tc.got), []byte(tc.want))
		if (tc.has == "") != (d == "") || !strings.Contains(d, tc.has) {
			t.Errorf("Diff(%q, %q) = %q, want %q", tc.got, tc.want, d, tc.has)
		}
	}
}

type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Errorf(format string, a ...any) { r.failed = format }
func (r *recorder) Fatalf(format string, a ...any) { r.failed = format }
func (r *recorder) Helper()                        {}

func TestCheck(t *testing.T) {
	path := filepath.Join("testdata", "sample.golden")
	Check(t, path, []byte("one\ntwo\n"))
	r := &recorder{TB: t}
	Check(r, path, []byte("one\nthree\n"))
	if r.failed == "" {
		t.Error("a differing output passed")
	}
	r = &recorder{TB: t}
	Check(r, filepath.Join("testdata", "missing.golden"), nil)
	if r.failed == "" {
		t.Error("a missing golden file passed")
	}
}
