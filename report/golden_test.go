package report

import (
	"path/filepath"
	"testing"

	"github.com/pikit-go/pikit/internal/golden"
)

// checkGolden compares got with the golden file testdata/name (go test
// ./report/ -update rewrites it).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}
