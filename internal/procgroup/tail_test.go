package procgroup

import "testing"

func TestTail(t *testing.T) {
	tl := NewTail(8)
	for _, s := range []string{"abc", "defgh", "ijklmnopqrstu", "vw", "é"} {
		tl.Write([]byte(s))
	}
	if got := tl.String(); got != "rstuvwé" || tl.Total() != 25 {
		t.Errorf("tail %q (total %d)", got, tl.Total())
	}
	cut := NewTail(3)
	cut.Write([]byte("xéé")) // keeps the second half of the first é
	if got := cut.String(); got != "é" {
		t.Errorf("cut tail %q", got)
	}
	small := NewTail(100)
	small.Write([]byte("hello"))
	if small.String() != "hello" {
		t.Errorf("%q", small.String())
	}
	// Filled a little at a time: the last bytes, a cut character dropped.
	grow := NewTail(8)
	for _, s := range []string{"abc", "defgh", "ijk"} {
		grow.Write([]byte(s))
	}
	if grow.String() != "defghijk" || grow.Total()-int64(len(grow.String())) != 3 {
		t.Errorf("%q, %d dropped", grow.String(), grow.Total()-int64(len(grow.String())))
	}
	grow.Write([]byte("0123456789é")) // the last 8 bytes hold é whole
	if grow.String() != "456789é" {
		t.Errorf("%q", grow.String())
	}
	grow.Write([]byte("é1234567"))
	if grow.String() != "1234567" {
		t.Errorf("a cut character is dropped: %q", grow.String())
	}
}
