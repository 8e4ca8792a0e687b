package report

import "flag"

// update rewrites the golden files under testdata instead of comparing
// with them: go test ./report/ -update.
var update = flag.Bool("update", false, "rewrite golden files")
