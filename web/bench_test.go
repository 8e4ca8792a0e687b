package web

// go test ./web -run '^$' -bench . -benchtime 20000x

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkServe has 64 sessions fetch their sites' pages at once, as 64
// concurrent cells' agents do, each page over HTTP from the server (one
// in six the page with the payload placed). It reports pages/s and the
// heap each open session holds.
func BenchmarkServe(b *testing.B) {
	const sessions = 64
	srv := &Server{}
	hs := newBenchServer(b, srv)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var open []*Session
	for i := range sessions {
		site := Sites()[i%len(Sites())]
		st, _ := LookupSite(site)
		s, err := srv.Open(fmt.Sprintf("bench-%d", i), benchDrive(b, "web_hidden"), Setup{Site: st, Start: st.Start, Taint: st.Taint})
		if err != nil {
			b.Fatal(err)
		}
		open = append(open, s)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sessions}}
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, s := range open {
		wg.Go(func() {
			pages := s.setup.Site.Pages
			for i := 0; next.Add(1) <= int64(b.N); i++ {
				resp, err := client.Get(hs + s.Base() + pages[i%len(pages)].Path[1:])
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pages/s")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/sessions/1024, "KB/session")
}
