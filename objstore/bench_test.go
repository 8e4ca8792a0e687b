package objstore

import (
	"context"
	"testing"
	"time"

	"github.com/pikit-go/pikit/judge"
)

// BenchmarkShardOutput writes b.N results through a shard's output to an
// in-process S3 (gofakes3) and finishes the shard: what an s3:// output
// costs the harness per cell, uploads and the final join included.
func BenchmarkShardOutput(b *testing.B) {
	st, _ := fakeS3(b)
	ctx := context.Background()
	line := lines(b, keysN(0, 1), judge.Refused)
	// A cell's line of a realistic size (~1.5 KB with its trace).
	pad := make([]byte, 0, 1536)
	pad = append(pad, line[:len(line)-2]...)
	pad = append(pad, `,"pad":"`...)
	for len(pad) < 1500 {
		pad = append(pad, 'x')
	}
	pad = append(pad, "\"}\n"...)
	b.SetBytes(int64(len(pad)))
	b.ReportAllocs()
	u, _ := ParseURL("s3://results/bench/")
	out, _, _, err := st.OpenShard(ctx, u, Shard{1, 1}, OutputOptions{Force: true, FlushEvery: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		copy(pad[8:24], keysN(i, 1)[0]) // a key of its own
		if _, err := out.Write(pad); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := out.Finish(ctx); err != nil {
		b.Fatal(err)
	}
}
