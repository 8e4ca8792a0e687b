// Package golden compares test output with golden files under testdata,
// for every package's tests: one -update flag rewrites them, and a
// difference is reported at its first differing line.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata instead of comparing with them")

// Updating reports whether the test run was asked to rewrite golden files
// (go test -update).
func Updating() bool { return *update }

// Check compares got with the golden file at path; with -update it writes
// got there instead (making the directory). A missing file, or one that
// differs, fails the test, naming the first line that differs.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if diff := Diff(got, want); diff != "" {
		t.Errorf("%s differs (go test -update rewrites it, if the change is meant): %s", path, diff)
	}
}

// Diff describes where got first differs from want, by line: "" when
// they are equal.
func Diff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl []byte
		gok, wok := i < len(g), i < len(w)
		if gok {
			gl = g[i]
		}
		if wok {
			wl = w[i]
		}
		if gok && wok && bytes.Equal(gl, wl) {
			continue
		}
		switch {
		case !gok:
			return fmt.Sprintf("line %d: got ends, want %.300q", i+1, wl)
		case !wok:
			return fmt.Sprintf("line %d: got %.300q, want ends", i+1, gl)
		}
		return fmt.Sprintf("line %d:\n got:  %.300q\n want: %.300q", i+1, gl, wl)
	}
	return "the files differ" // not reached: equal lines make equal bytes
}
