package blocks_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/tokens"
)

// Sixteen appenders on two sidecars lose no append: every piece is in the
// block exactly once, each appender's in its order, and the tokens are the
// estimate of the whole content.
func TestConcurrentAppends(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		hosts := []*sidecartest.Host{start(t, srv, nil), start(t, srv, nil)}
		const appenders, each = 16, 20
		for _, path := range []string{"/v1/users/alice/blocks/log", "/v1/users/alice/sessions/s1/blocks/log"} {
			wantBlock(t, hosts[0].Do(t, "PUT", path, `{"content":""}`), 201)
			var wg sync.WaitGroup
			errs := make(chan string, appenders*each)
			for a := range appenders {
				wg.Go(func() {
					c := sidecartest.NewClient(t, hosts[a%2].API)
					for i := range each {
						rep := c.Send(t.Context(), "POST", path+"/append", fmt.Sprintf(`{"content":"<%d.%d> "}`, a, i))
						if rep.Status != 200 {
							errs <- fmt.Sprintf("appender %d: %d %s", a, rep.Status, rep.Body)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			got := wantBlock(t, hosts[1].Do(t, "GET", path, ""), 200)
			for a := range appenders {
				last := -1
				for i := range each {
					piece := fmt.Sprintf("<%d.%d> ", a, i)
					if n := strings.Count(got.Content, piece); n != 1 {
						t.Fatalf("%s: piece %q found %d times", path, piece, n)
					}
					at := strings.Index(got.Content, piece)
					if at < last {
						t.Fatalf("%s: appender %d's pieces out of order", path, a)
					}
					last = at
				}
			}
			if got.Tokens != tokens.Estimate(got.Content) {
				t.Errorf("%s: tokens %d, want the estimate %d", path, got.Tokens, tokens.Estimate(got.Content))
			}
		}
	})
}

// The script's token count of an appended block (the stored counts
// combined with each piece's) is tokens.Estimate of the whole content,
// whatever the pieces: spaces at the seams, Unicode spaces, CJK, escapes.
func TestAppendTokensMatchEstimate(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		alphabet := []string{"a", "bc", " ", "  ", "\n", "\t", "\u00a0", "\u3000", "日本", "é", "\"", "\\", "/", "<&>", "x y", "\u2028"}
		rng := rand.New(rand.NewPCG(1, 2))
		for b := range 5 {
			path := fmt.Sprintf("/v1/users/alice/sessions/s1/blocks/b%d", b)
			wantBlock(t, h.Do(t, "PUT", path, `{"content":"start"}`), 201)
			content := "start"
			for range 30 {
				var piece strings.Builder
				for range rng.IntN(4) {
					piece.WriteString(alphabet[rng.IntN(len(alphabet))])
				}
				body, _ := json.Marshal(map[string]string{"content": piece.String()})
				got := wantBlock(t, h.Do(t, "POST", path+"/append", string(body)), 200)
				content += piece.String()
				if got.Content != content || got.Tokens != tokens.Estimate(content) {
					t.Fatalf("after appending %q: content %q, tokens %d; want %q, %d", piece.String(), got.Content, got.Tokens, content, tokens.Estimate(content))
				}
			}
		}
	})
}
