package cli

import "testing"

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"16MiB": 16 << 20, "64MB": 64_000_000, "1GiB": 1 << 30, "512k": 512 << 10, "1048576": 1 << 20, " 2 mib ": 2 << 20} {
		var s byteSize
		if err := s.Set(in); err != nil || int64(s) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "lots", "1.5MiB", "99999999999GiB"} {
		var s byteSize
		if err := s.Set(in); err == nil {
			t.Errorf("Set(%q) took %d", in, s)
		}
	}
	s := byteSize(16 << 20)
	if s.String() != "16MiB" {
		t.Errorf("String() = %s", s.String())
	}
}
