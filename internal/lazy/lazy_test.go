package lazy

import "testing"

func TestRegexpCompilesOnce(t *testing.T) {
	re := Regexp(`^a+$`)
	first := re()
	if !first.MatchString("aaa") || first.MatchString("b") || re() != first {
		t.Error("want one compiled expression, matching as regexp does")
	}
	defer func() {
		if recover() == nil {
			t.Error("a bad expression must panic on first use")
		}
	}()
	Regexp(`(`)()
}
