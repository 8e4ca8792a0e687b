package proxy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// events records the events a parser dispatches.
type events struct {
	got []sseEvent
}

func (e *events) event(name string, data []byte) {
	e.got = append(e.got, sseEvent{name, string(data)})
}

func (e *events) reply() reply { return reply{} }

// feed writes b to a new parser in pieces of the sizes next gives, and
// closes it.
func feed(b []byte, next func() int) []sseEvent {
	rec := &events{}
	p := &sseParser{r: rec}
	for len(b) > 0 {
		n := min(next(), len(b))
		if m, err := p.Write(b[:n]); m != n || err != nil {
			panic(fmt.Sprintf("Write: %d, %v", m, err))
		}
		b = b[n:]
	}
	p.close()
	return rec.got
}

func whole() int { return 1 << 30 }

// TestSSEParserChunking: every recorded stream reads the same whatever the
// Write boundaries (byte by byte, at random), with CRLF line ends, and with
// comments and other fields between its events.
func TestSSEParserChunking(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.sse"))
	if err != nil || len(files) != 9 {
		t.Fatalf("%d streams in testdata (%v), want 9", len(files), err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := sseEvents(b)
		if len(want) < 5 {
			t.Fatalf("%s: %d events", f, len(want))
		}
		variants := map[string][]byte{
			"as sent": b,
			"CRLF":    bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")),
			"comments and other fields": bytes.ReplaceAll(b, []byte("\n\n"),
				[]byte("\n\n: keep-alive\n\nid: 7\nretry: 3000\n: a comment inside an event\n\n")),
			"no blank line at the end": bytes.TrimSuffix(b, []byte("\n\n")),
		}
		for vname, v := range variants {
			rng := rand.New(rand.NewPCG(1, uint64(len(v))))
			for cname, next := range map[string]func() int{
				"whole":        whole,
				"byte by byte": func() int { return 1 },
				"random":       func() int { return 1 + rng.IntN(40) },
			} {
				if got := feed(v, next); !reflect.DeepEqual(got, want) {
					t.Errorf("%s, %s, %s:\n got %q\nwant %q", f, vname, cname, got, want)
				}
			}
		}
	}
}

func TestSSEParserLines(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"data without a space", "data:{\"a\":1}\n\n", []sseEvent{{"", `{"a":1}`}}},
		{"only the first space goes", "data:  x\n\n", []sseEvent{{"", " x"}}},
		{"data lines join with newlines", "data: a\ndata: b\n\n", []sseEvent{{"", "a\nb"}}},
		{"the name is the event's own", "event: one\ndata: 1\n\ndata: 2\n\n", []sseEvent{{"one", "1"}, {"", "2"}}},
		{"CR and LF in different writes", "data: 1\r", nil}, // completed below
		{"a name without data is no event", "event: ping\n\ndata: 1\n\n", []sseEvent{{"", "1"}}},
		{"blank lines between events", "\n\n\ndata: 1\n\n\n\ndata: 2\n\n", []sseEvent{{"", "1"}, {"", "2"}}},
		{"a comment", ": hello\n\n", nil},
		{"unknown fields", "id: 3\nretry: 10\nfoo: bar\ndata: x\n\n", []sseEvent{{"", "x"}}},
		{"a last event without its blank line", "data: 1\n\ndata: 2", []sseEvent{{"", "1"}, {"", "2"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == nil && strings.HasSuffix(tc.in, "\r") {
				rec := &events{}
				p := &sseParser{r: rec}
				p.Write([]byte(tc.in))
				p.Write([]byte("\n"))
				p.Write([]byte("\r"))
				p.Write([]byte("\n"))
				if want := []sseEvent{{"", "1"}}; !reflect.DeepEqual(rec.got, want) {
					t.Errorf("got %q, want %q", rec.got, want)
				}
				return
			}
			for _, next := range []func() int{whole, func() int { return 1 }} {
				if got := feed([]byte(tc.in), next); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// TestSSEParserOverlong: an event over maxEventBytes is skipped, whether
// one line or many make it long, and the parser holds no more than one
// event's worth of memory meanwhile; the events after it are read.
func TestSSEParserOverlong(t *testing.T) {
	long := strings.Repeat("x", maxEventBytes)
	cases := map[string]string{
		"one long line":    "data: {\"a\":\"" + long + "\"}\n\n",
		"many lines":       strings.Repeat("data: "+long[:1<<16]+"\n", maxEventBytes>>16+2) + "\n",
		"CRLF":             "data: " + long + "\r\n\r\n",
		"CR at a boundary": "data: " + long[:maxEventBytes-7] + "\r\n\r\n",
	}
	for name, big := range cases {
		t.Run(name, func(t *testing.T) {
			in := "data: before\n\n" + big + "event: after\ndata: {\"after\":true}\n\n"
			rec := &events{}
			p := &sseParser{r: rec}
			peak := 0
			b := []byte(in)
			for len(b) > 0 {
				n := min(1<<15+3, len(b))
				p.Write(b[:n])
				b = b[n:]
				peak = max(peak, cap(p.line)+cap(p.data))
			}
			p.close()
			want := []sseEvent{{"", "before"}, {"after", `{"after":true}`}}
			if name == "CR at a boundary" {
				// Just fits: read as it is.
				want = []sseEvent{{"", "before"}, {"", long[:maxEventBytes-7]}, {"after", `{"after":true}`}}
			}
			if !reflect.DeepEqual(rec.got, want) {
				var short []string
				for _, e := range rec.got {
					short = append(short, fmt.Sprintf("%s:%.40s(%d)", e.name, e.data, len(e.data)))
				}
				t.Errorf("events %v, want before and after only", short)
			}
			if peak > 3*maxEventBytes {
				t.Errorf("the parser held %d bytes for a %d-byte limit", peak, maxEventBytes)
			}
			if p.overflow != (name != "CR at a boundary") {
				t.Errorf("overflow %v", p.overflow)
			}
		})
	}
}

// TestSSEParserOverlongByCR: a line that reaches the limit with the CR
// of its CRLF, written alone, is still a line of the dropped event, not a
// blank line that would end it early.
func TestSSEParserOverlongByCR(t *testing.T) {
	rec := &events{}
	p := &sseParser{r: rec}
	p.Write([]byte("data: " + strings.Repeat("x", maxEventBytes-6)))
	for _, w := range []string{"\r", "\n", "data: still the long event\r\n", "\r\n", "data: after\r\n\r\n"} {
		p.Write([]byte(w))
	}
	p.close()
	if want := []sseEvent{{"", "after"}}; !reflect.DeepEqual(rec.got, want) || !p.overflow {
		t.Errorf("events %.80q, overflow %v; want %q", rec.got, p.overflow, want)
	}
}

// TestStreamReaders: the proxy's readers of each format take
// in the recorded streams, with the noise a real stream carries, and read
// the same answer as the agent.
func TestStreamReaders(t *testing.T) {
	for _, w := range wires {
		for _, name := range []string{"read", "sink", "final"} {
			t.Run(w.name+"/"+name, func(t *testing.T) {
				b := fixture(t, w.name, name, true)
				b = bytes.ReplaceAll(b, []byte("\n\n"), []byte("\n\n: keep-alive\n\n"))
				var f format
				switch w.name {
				case "chat":
					f = chatFormat{}
				case "responses":
					f = responsesFormat{}
				default:
					f = anthropicFormat{}
				}
				r := f.newStream()
				p := &sseParser{r: r}
				for i := range b {
					p.Write(b[i : i+1])
				}
				p.close()
				got := r.reply()
				want, err := w.decode(b, true)
				if err != nil {
					t.Fatal(err)
				}
				if got.err != "" || got.text != want.text || got.usage.PromptTokens != want.prompt || got.usage.CompletionTokens != want.output || len(got.calls) != len(want.calls) {
					t.Fatalf("the proxy read %+v, the agent %+v", got, want)
				}
				for i, c := range got.calls {
					if c.ID != want.calls[i].id || c.Name != want.calls[i].name || !jsonEqual(t, []byte(c.Arguments), []byte(want.calls[i].args)) {
						t.Errorf("call %d: %+v, want %+v", i, c, want.calls[i])
					}
				}
				whole := f.parseResponse(fixture(t, w.name, name, false))
				if whole.text != got.text || len(whole.calls) != len(got.calls) || whole.usage != got.usage {
					t.Errorf("the whole answer reads %+v, the stream %+v", whole, got)
				}
			})
		}
	}
}
