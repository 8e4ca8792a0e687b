package proxy

// Benchmarks of what the proxy adds to an agent's model requests, against
// a fake upstream that answers at once (0 ms). They run only with -bench:
//
//	go test ./proxy -run '^$' -bench . -benchmem
//	go test ./proxy -run '^$' -bench Latency -benchtime 3000x
//	go test ./proxy -run '^$' -bench LatencyProcess -benchtime 3000x -count 3
//
// Each Benchmark*/direct calls the fake upstream itself, and */proxy the
// same through a proxy session: the difference is the proxy's cost.
// BenchmarkProxyLatencyProcess runs the upstream as a process of its own
// (this test binary, see upstreamMain), so that its work does not share a
// Go runtime, a scheduler and a garbage collector with the proxy's.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikit-go/pikit/matrix"
)

// benchCase is one kind of request an agent sends: its second turn, with a
// tool result the proxy rewrites, and the answer it gets.
type benchCase struct {
	name   string
	wire   string
	stream bool
	answer string // fixture
	// history is the size of the conversation before the second turn,
	// in bytes of earlier turns (0: none).
	history int
}

var benchCases = []benchCase{
	{"chat", "chat", false, "sink", 0},
	{"chat-stream", "chat", true, "sink", 0},
	{"anthropic-stream", "anthropic", true, "sink", 0},
	{"chat-50KB", "chat", false, "sink", 50 << 10},
	{"anthropic-50KB", "anthropic", false, "sink", 50 << 10},
	{"responses-50KB", "responses", false, "sink", 50 << 10},
}

// processCases are what BenchmarkProxyLatencyProcess times: a second turn
// after 50 KB of history, in each format, and streamed.
var processCases = []benchCase{
	{"chat-50KB", "chat", false, "sink", 50 << 10},
	{"chat-stream-50KB", "chat", true, "sink", 50 << 10},
	{"responses-50KB", "responses", false, "sink", 50 << 10},
	{"anthropic-50KB", "anthropic", false, "sink", 50 << 10},
}

// earlier returns turns of an earlier conversation, about n bytes of them.
func earlier(n int) []msg {
	var out []msg
	for size, i := 0, 0; size < n; i++ {
		q := fmt.Sprintf("Question %d: what did the %d-th report of the quarter say about the venue budget, and who signed it off?", i, i)
		a := strings.Repeat(fmt.Sprintf("Report %d says the venue budget stays at 4,200 and the team lead signed it on Friday. ", i), 4)
		out = append(out, msg{role: "user", text: q}, msg{role: "assistant", text: a})
		size += len(q) + len(a)
	}
	return out
}

// benchSetup is a fake upstream, a proxy with one session, the request
// body, and the URLs that reach the upstream directly and through the
// proxy.
type benchSetup struct {
	body          []byte
	direct, proxy string
	client        *http.Client
	srv           *Server
	session       *Session
}

func newBench(b *testing.B, c benchCase) *benchSetup {
	b.Helper()
	answer := fixture(b, c.wire, c.answer, c.stream)
	chunks := sseChunks(answer)
	up := newUpstream(b, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		if c.stream {
			writeStream(b, rw, chunks, nil)
			return
		}
		writeWhole(rw, answer)
	})
	up.forget()
	return benchAt(b, c, up.URL)
}

// benchAt sets up c against the upstream at upURL, which answers c's
// requests.
func benchAt(b *testing.B, c benchCase, upURL string) *benchSetup {
	b.Helper()
	w := wireNamed(c.wire)
	srv, hs := newProxy(b, w.upstreamBase(upURL))
	s := mustOpen(b, srv, "bench", newDrive(w.spec), sinkRules())
	return &benchSetup{
		session: s,
		body: w.encode(w.model, c.stream, append(earlier(c.history),
			msg{role: "user", text: userText},
			msg{role: "assistant", calls: []call{{"call_1", "read_inbox", `{"folder": "inbox"}`}}},
			msg{role: "tool", callID: "call_1", name: "read_inbox", text: inboxText},
		)),
		direct: upURL + w.upPath,
		proxy:  w.baseFor(hs.URL, "bench") + w.agentPath,
		client: benchClient(),
		srv:    srv,
	}
}

// benchClient is the agent's client. Its write buffer holds a 50 KB
// body whole: with net/http's default (4 KB) each body sent would leave
// 32 KB of garbage (its copy buffer) in this process, where the proxy
// runs too, and the agent's garbage is not the proxy's cost.
func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, WriteBufferSize: 128 << 10}}
}

// do sends the request and reads the whole answer.
func (s *benchSetup) do(b testing.TB, url string) {
	resp, err := s.client.Post(url, "application/json", bytes.NewReader(s.body))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s", resp.Status)
	}
}

func benchRequests(b *testing.B, c benchCase) {
	s := newBench(b, c)
	for _, via := range []string{"direct", "proxy"} {
		b.Run(via, func(b *testing.B) {
			url := s.direct
			if via == "proxy" {
				url = s.proxy
			}
			s.do(b, url) // warm the connections
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s.do(b, url)
			}
		})
	}
}

// BenchmarkProxyChat: a whole Chat Completions answer.
func BenchmarkProxyChat(b *testing.B) { benchRequests(b, benchCases[0]) }

// BenchmarkProxyChat50KB: a whole Chat Completions answer to a request
// with 50 KB of history.
func BenchmarkProxyChat50KB(b *testing.B) { benchRequests(b, benchCases[3]) }

// BenchmarkProxyChatStream: a streamed Chat Completions answer.
func BenchmarkProxyChatStream(b *testing.B) { benchRequests(b, benchCases[1]) }

// BenchmarkProxyAnthropicStream: a streamed Anthropic Messages answer.
func BenchmarkProxyAnthropicStream(b *testing.B) { benchRequests(b, benchCases[2]) }

// percentile returns the q quantile of d in microseconds.
func percentile(d []time.Duration, q float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	i := min(len(s)-1, int(q*float64(len(s))))
	return float64(s[i]) / float64(time.Microsecond)
}

// BenchmarkProxyLatency times each request, direct and through the proxy
// in turn, and reports the latency the proxy adds at the median and the
// 99th percentile (the difference of the two runs' percentiles), with the
// direct figures beside them. Give it enough requests for a p99:
// -benchtime 3000x.
func BenchmarkProxyLatency(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) { latency(b, newBench(b, c)) })
	}
}

// BenchmarkProxyLatencyProcess is BenchmarkProxyLatency against an
// upstream that is a process of its own, with the history of an agent's
// later turns (50 KB): a net/http client in this process sends each
// request to that upstream directly and through a proxy in this process.
// "p99-µs" is the latency the proxy adds at the 99th percentile.
func BenchmarkProxyLatencyProcess(b *testing.B) {
	// The collector as pikit sets it for every command (tuneGC in
	// internal/cli), here and in the upstream process.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	upURL := startUpstream(b)
	// The floor: what any proxy in this process adds, a reverse proxy of
	// Go's own library that reads nothing, in front of the same upstream.
	b.Run("floor-reverseproxy-chat-50KB", func(b *testing.B) {
		u, err := url.Parse(upURL)
		if err != nil {
			b.Fatal(err)
		}
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.Transport = upstreamTransport()
		hs := httptest.NewServer(rp)
		b.Cleanup(hs.Close)
		s := benchAt(b, processCases[0], upURL)
		s.proxy = hs.URL + wireNamed(processCases[0].wire).upPath
		latency(b, s)
	})
	for _, c := range processCases {
		b.Run(c.name, func(b *testing.B) {
			s := benchAt(b, c, upURL)
			latency(b, s)
			// The timed requests must have been rewritten, not passed
			// through: the proxy's cost is in reading and rewriting.
			if tr := s.session.Trace(); !tr.TaintDelivered || s.session.Passed() != 0 {
				b.Fatalf("the proxy did not rewrite the requests: delivered %v, passed %d", tr.TaintDelivered, s.session.Passed())
			}
		})
	}
}

// latency times s's request direct and through the proxy in turn (so that
// whatever else the machine does falls on both alike) and reports the
// difference of their percentiles.
func latency(b *testing.B, s *benchSetup) {
	s.do(b, s.direct)
	s.do(b, s.proxy)
	var direct, via []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		s.do(b, s.direct)
		mid := time.Now()
		s.do(b, s.proxy)
		direct, via = append(direct, mid.Sub(start)), append(via, time.Since(mid))
	}
	b.ReportMetric(percentile(via, 0.50)-percentile(direct, 0.50), "p50-µs")
	b.ReportMetric(percentile(via, 0.99)-percentile(direct, 0.99), "p99-µs")
	b.ReportMetric(percentile(direct, 0.50), "direct-p50-µs")
	b.ReportMetric(percentile(direct, 0.99), "direct-p99-µs")
	b.ReportMetric(float64(len(s.body))/1024, "body-KB")
}

// envUpstream makes the test binary a model API (see TestMain): the
// upstream process of BenchmarkProxyLatencyProcess.
const envUpstream = "PIKIT_PROXY_TEST_UPSTREAM"

// startUpstream runs the test binary as a model API (upstreamMain) and
// returns its URL. The process ends when the benchmark does: it exits
// when its stdin closes.
func startUpstream(b *testing.B) string {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envUpstream+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("the upstream process did not start: %v", err)
	}
	return "http://" + strings.TrimSpace(addr)
}

// upstreamMain serves testdata's sink answers, in the format the path
// names, whole or streamed as the request asks, at once. It prints its
// address, and exits when its stdin closes.
func upstreamMain() int {
	debug.SetGCPercent(800)
	type answer struct {
		whole  []byte
		chunks [][]byte
	}
	answers := map[string]answer{}
	for _, w := range wires {
		whole, err := os.ReadFile(filepath.Join("testdata", w.name, "sink.json"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		sse, err := os.ReadFile(filepath.Join("testdata", w.name, "sink.sse"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		answers[w.upPath] = answer{whole, sseChunks(sse)}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fmt.Println(ln.Addr())
	// Bodies are read into buffers used again: the upstream's garbage
	// would have its collector run every few requests, adding noise to
	// both paths.
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := bufs.Get().(*bytes.Buffer)
		defer bufs.Put(buf)
		buf.Reset()
		_, err := buf.ReadFrom(r.Body)
		a, ok := answers[r.URL.Path]
		if err != nil || !ok {
			http.Error(w, "no such model API", http.StatusNotFound)
			return
		}
		// Not a JSON decoding: the upstream's own reading of the body
		// is the same on both paths, and kept small so as to add little
		// noise to them.
		if !bytes.Contains(buf.Bytes(), []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(a.whole)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		for _, c := range a.chunks {
			w.Write(c)
			w.(http.Flusher).Flush()
		}
	}))
	return 1
}

// BenchmarkProxyMemory64Streams holds 64 streamed sessions open at once,
// each halfway through its answer, and reports the live heap then (after
// a GC) over the heap before: "MiB" for the whole process (the fake
// upstream and the 64 clients included), so proxy minus direct is what
// the proxy holds.
func BenchmarkProxyMemory64Streams(b *testing.B) {
	const n = 64
	w := wireNamed("chat")
	chunks := sseChunks(fixture(b, "chat", "sink", true))
	half := len(chunks) / 2
	var firstHalf []byte
	for _, c := range chunks[:half] {
		firstHalf = append(firstHalf, c...)
	}
	for _, via := range []string{"direct", "proxy"} {
		b.Run(via, func(b *testing.B) {
			var release chan struct{}
			up := newUpstream(b, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				rw.Header().Set("Content-Type", "text/event-stream")
				for _, c := range chunks[:half] {
					rw.Write(c)
				}
				rw.(http.Flusher).Flush()
				<-release
				for _, c := range chunks[half:] {
					rw.Write(c)
				}
			})
			up.forget()
			srv, hs := newProxy(b, w.upstreamBase(up.URL))
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
			body := w.encode(w.model, true, []msg{{role: "user", text: userText}})
			var peak float64
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				release = make(chan struct{})
				sessions := make([]*Session, n)
				for j := range sessions {
					s, err := srv.Open(fmt.Sprintf("m%d-%d", i, j), newDrive(w.spec), sinkRules())
					if err != nil {
						b.Fatal(err)
					}
					sessions[j] = s
				}
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				var midway, done sync.WaitGroup
				midway.Add(n)
				for j := range n {
					url := up.URL + w.upPath
					if via == "proxy" {
						url = w.baseFor(hs.URL, sessions[j].ID) + w.agentPath
					}
					done.Go(func() {
						resp, err := client.Post(url, "application/json", bytes.NewReader(body))
						if err != nil {
							b.Error(err)
							midway.Done()
							return
						}
						defer resp.Body.Close()
						got := make([]byte, len(firstHalf))
						_, err = io.ReadFull(resp.Body, got)
						midway.Done()
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
					})
				}
				midway.Wait()
				runtime.GC()
				var at runtime.MemStats
				runtime.ReadMemStats(&at)
				peak = max(peak, float64(int64(at.HeapAlloc)-int64(before.HeapAlloc))/(1<<20))
				close(release)
				done.Wait()
				for _, s := range sessions {
					srv.Close(s)
				}
			}
			b.ReportMetric(peak, "MiB")
		})
	}
}

// BenchmarkSessions reports sessions per second with 16 at a time, each a
// two-turn chat conversation (streamed): "inprocess" opens sessions and
// runs the agents as goroutines; "driver" runs matrix.Runner with -j 16
// and the proxy's Driver, one agent process (this test binary) per cell,
// judged — what pikit proxy run does, with an agent that starts fast.
func BenchmarkSessions(b *testing.B) {
	const j = 16
	b.Run("inprocess", func(b *testing.B) {
		up := formatUpstream(b)
		up.forget()
		w := wireNamed("chat")
		srv, hs := newProxy(b, w.upstreamBase(up.URL))
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * j}}
		ids := make(chan int)
		var wg sync.WaitGroup
		start := time.Now()
		for range j {
			wg.Go(func() {
				for id := range ids {
					name := fmt.Sprintf("b%d", id)
					s, err := srv.Open(name, newDrive(w.spec), sinkRules())
					if err != nil {
						b.Error(err)
						return
					}
					if _, err := runAgent(b.Context(), client, w, w.baseFor(hs.URL, name)+w.agentPath, true, nil); err != nil {
						b.Error(err)
					}
					srv.Close(s)
				}
			})
		}
		for i := 0; b.Loop(); i++ {
			ids <- i
		}
		close(ids)
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sessions/s")
	})
	b.Run("driver", func(b *testing.B) {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		b.Setenv(envAgent, "chat,stream")
		cells := planDriven(b, `attacks = ["naive"]
target_spec = "mock:obedient"
repeats = `+fmt.Sprint(max(b.N, 1))+`
[proxy]
sinks = ["send_*"]
`)
		srv, hs := newProxy(b, "")
		d := &Driver{Server: srv, URL: hs.URL, Command: []string{exe}, Timeout: time.Minute}
		b.ResetTimer()
		start := time.Now()
		res, err := matrix.Runner{Concurrency: j, Driver: d}.RunAll(b.Context(), cells)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(res))/time.Since(start).Seconds(), "sessions/s")
		for _, r := range res {
			if r.Error != "" || !strings.Contains(string(r.Outcome), "success") {
				b.Fatalf("%s: %s %s", r.Key, r.Outcome, r.Error)
			}
		}
	})
}
